"""The experiment form's environment section in a real browser: an environment written into it is validated by the
environment's own rules (a turn-credit method that needs turn rewards is refused for the calculator, next to the
field, with what to change), and the experiment stores the environment chosen, its defaults filled in."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS
from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def test_an_environment_is_checked_where_it_is_written_and_the_experiment_keeps_it(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.experiments.models import Experiment

    project = make_project(make_user("alice"), "Lab")
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/experiments/new/")
    page.click("details[data-section='environment'] > summary")  # folded until opened
    page.fill("#exp-name", "episodes")
    field = page.locator("#cfg-environment")
    field.fill(json.dumps({"name": "calculator", "turn_credit": "tcpo"}))
    page.click("#experiment-form button[type=submit]")
    error = page.locator("#experiment-form p.error[data-error-for^='config.environment']:not([hidden])").first
    error.wait_for()
    assert "gives no reward per turn" in error.inner_text() and "self_correction" in error.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("details[data-section='environment']").screenshot(
        path=str(SCREENSHOTS / "test_experiment_form_environment--refused.png"),
        style=".actions.sticky { visibility: hidden; }",
    )

    field.fill(json.dumps({"name": "self_correction", "turn_credit": "tcpo", "limits": {"max_turns": 3}}))
    page.click("#experiment-form button[type=submit]")
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    environment = Experiment.objects.get(name="episodes").config["environment"]
    assert environment["name"] == "self_correction" and environment["limits"]["max_turns"] == 3
    assert environment["turn_credit"] == {"name": "tcpo", "params": {"weight": 1.0, "hindsight_gamma": 0.5,
                                                                     "first_baseline": None, "eps": 0.0001}}  # fmt: skip
    assert environment["params"]["retry_message"]  # the environment's own default, filled in
    screenshot(page, "experiment")
    assert page.js_errors == []
