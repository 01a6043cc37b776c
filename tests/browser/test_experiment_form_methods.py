"""A method choice in the experiment form, in a real browser: picking a method in its select fills the params
area with that method's defaults, and the submitted experiment stores the method with those params."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS
from tests.browser.helpers import PASSWORD
from trainer.methods.token_credit import TOKEN_CREDIT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def test_picking_a_token_credit_method_fills_its_default_params_and_the_experiment_keeps_them(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.experiments.models import Experiment

    project = make_project(make_user("alice"), "Lab")
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/experiments/new/")
    select = page.locator("select[data-path='algorithm.token_credit.name']")
    params = page.locator("textarea[data-path='algorithm.token_credit.params']")
    assert select.input_value() == "uniform" and json.loads(params.input_value()) == {}
    assert "forking" in (select.locator("option[value='top_entropy']").get_attribute("title") or "")
    listed = select.locator("xpath=..").locator("dl.choices dt")  # the select's own .field
    assert listed.all_inner_texts() == [e.name for e in TOKEN_CREDIT.choices()]  # every method, the default first

    select.select_option("top_entropy")
    assert json.loads(params.input_value()) == {"quantile": 0.2}
    section = page.locator("details[data-section='algorithm']")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(  # the sticky submit bar would cover part of a section taller than the viewport
        path=str(SCREENSHOTS / "test_experiment_form_methods--algorithm-section.png"),
        style=".actions.sticky { visibility: hidden; }",
    )

    page.fill("#exp-name", "forking tokens")
    page.click("#experiment-form button[type=submit]")
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    config = Experiment.objects.get(name="forking tokens").config
    assert config["algorithm"]["token_credit"] == {"name": "top_entropy", "params": {"quantile": 0.2}}
    screenshot(page, "experiment")
    assert page.js_errors == []
