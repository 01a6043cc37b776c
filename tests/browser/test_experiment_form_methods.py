"""A method choice in the experiment form, in a real browser: picking a method in its select shows that
method's own parameter fields filled with its defaults, and the submitted experiment stores the method with
those params."""

from __future__ import annotations

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
    page.click("details[data-section='algorithm'] > summary")  # folded until opened
    select = page.locator("#ed-algorithm-token_credit-name")
    assert select.input_value() == "uniform"
    offered = select.locator("option")
    assert [offered.nth(i).get_attribute("value") for i in range(offered.count())] == [
        e.name for e in TOKEN_CREDIT.choices()
    ]  # every method, the default first
    assert "forking" in (select.locator("option[value='top_entropy']").get_attribute("title") or "")
    editor = page.locator("#cfg-algorithm-token_credit-editor")
    assert editor.locator(".method-params input").count() == 0  # uniform has no parameters

    select.select_option("top_entropy")
    quantile = page.locator("#ed-algorithm-token_credit-params-quantile")
    assert quantile.input_value() == "0.2"  # the method's default
    assert "forking" in editor.locator(".method-about").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("details[data-section='algorithm']").screenshot(  # the sticky bar would cover a tall section
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
