"""The rubric editor in a real browser: build a rubric with a rule, a judge and a human criterion, reorder
it, see a field error, save it, then train with it: the experiment form's picker fills the rubric section."""

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


def criterion(page: Any, index: int) -> Any:
    return page.locator("#criteria > li.criterion").nth(index)


def test_a_rubric_is_built_in_the_browser_and_picked_as_the_training_reward(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.experiments.models import Experiment
    from webapp.rubrics.models import Rubric

    project = make_project(make_user("alice"), "Lab")
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/")
    page.click("text=Rubrics")
    page.click("text=New rubric")
    page.fill("#rubric-name", "Addition <b>quality</b>")
    page.select_option("#rubric-aggregation", "rank")

    first = criterion(page, 0)  # a rule criterion, with a broken regex for now
    first.locator('[data-field="name"]').fill("has digits")
    first.locator('[data-field="rule_params"]').fill('{"pattern": "[0-9"}')
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator('[data-field="name"]').fill("judge sum")
    second.locator('[data-field="scorer"]').select_option("judge")
    second.locator('[data-field="scale"]').select_option("range")
    second.locator('[data-field="max_value"]').fill("200")
    second.locator('[data-field="prompt_template"]').fill("{completion}+1=")
    second.locator('[data-field="parse_pattern"]').fill("(\\d+)")
    assert second.locator(".scorer-rule").is_hidden() and second.locator(".scorer-judge").is_visible()
    page.click("#add-criterion")
    third = criterion(page, 2)
    third.locator('[data-field="name"]').fill("tone")
    third.locator('[data-field="scorer"]').select_option("human")
    third.locator('[data-action="up"]').click()  # tone moves above the judge criterion
    assert criterion(page, 1).locator('[data-field="name"]').input_value() == "tone"
    assert criterion(page, 2).locator('[data-field="prompt_template"]').input_value() == "{completion}+1="

    page.click("#rubric-form button[type=submit]")
    error = page.locator('[data-error-for="criteria.0.rule"]')
    error.wait_for(state="visible")
    assert "not a valid regular expression" in error.inner_text()
    screenshot(page, "field-error")
    assert Rubric.objects.count() == 0

    criterion(page, 0).locator('[data-field="rule_params"]').fill('{"pattern": "[0-9]"}')
    page.click("#rubric-form button[type=submit]")
    page.wait_for_url(re.compile(r"/rubrics/\d+/$"))
    rubric = Rubric.objects.get()
    assert [c.name for c in rubric.criteria.all()] == ["has digits", "tone", "judge sum"]
    assert page.locator("h1").inner_text() == "Addition <b>quality</b>"  # shown as text, not markup
    screenshot(page, "detail")

    page.click("text=Train with this rubric")
    page.wait_for_function("() => document.getElementById('cfg-rubric').value.includes('judge sum')")
    section = json.loads(page.input_value("#cfg-rubric"))
    assert section["aggregation"] == "rank" and [c["name"] for c in section["criteria"]] == [
        "has digits",
        "tone",
        "judge sum",
    ]
    assert (
        page.locator("#ed-rubric-criteria-2-judge-prompt_template").input_value() == "{completion}+1="
    )  # the editor
    page.locator("details[data-section='rubric']").screenshot(
        path=str(SCREENSHOTS / "test_rubric_editor--experiment-form-rubric.png"),
        style=".actions.sticky { visibility: hidden; }",
    )
    page.fill("#ed-rubric-judge_model-name_or_path", "tiny:addition")  # a judged criterion names its judge
    page.fill("#exp-name", "rubric reward")
    page.click("#experiment-form button[type=submit]")
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    config = Experiment.objects.get(name="rubric reward").config
    assert config["rubric"]["judge_model"]["name_or_path"] == "tiny:addition"
    assert config["rubric"]["criteria"][2]["judge"]["prompt_template"] == "{completion}+1="
    page.goto(f"/projects/{project.pk}/experiments/new/")
    page.click("details[data-section='rubric'] > summary")  # folded unless a rubric was asked for
    page.select_option("#rubric-picker", "")
    assert page.input_value("#cfg-rubric") == "null"
    assert page.js_errors == []
