"""An annotator scores three items with the keyboard only: digits score the focused criterion (focus moves
on), s submits and opens the next item, ? toggles help, k/j move back and forth; a draft survives a reload;
model text with markup is shown literally."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import seed_run, store_step
from tests.webapp.helpers import rollout_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

XSS = '<img src=x onerror="window.__xss=1">'


def seed_task() -> Any:
    """alice's run with three rollouts carrying rule/judge rubric scores, a rubric, and a task for dana."""
    from tests.workers.helpers import make_user
    from webapp.annotation.services import task_create_from_run
    from webapp.rubrics.models import Criterion, Rubric
    from webapp.teams.models import Membership

    run = seed_run()
    project = run.experiment.project
    Membership.objects.create(project=project, user=make_user("dana"), role="annotator")
    rubric = Rubric.objects.create(project=project, name="quality")
    Criterion.objects.create(rubric=rubric, position=0, name="has_answer", scale="binary", scorer="rule")
    Criterion.objects.create(
        rubric=rubric, position=1, name="clarity", scale="likert5", min_value=1, max_value=5, scorer="judge"
    )
    records = [
        rollout_record(1, 0, s, completion=XSS if s == 1 else "The answer is 4",
                       rewards={"rubric/has_answer": 1.0, "rubric/clarity": 0.6})
        for s in range(3)
    ]  # fmt: skip
    store_step(run, 1, records)
    return task_create_from_run(
        run=run,
        rubric=rubric,
        actor=run.created_by,
        sampling={"n": 3},
        annotators=["dana"],
        annotators_per_item=1,
    )


def test_an_annotator_scores_three_items_with_the_keyboard_only(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.annotation.models import Assignment

    task = seed_task()
    sign_in("dana", "pw-dana-123")
    page.goto(f"/annotation/{task.pk}/annotate/")
    page.wait_for_selector("body[data-ann-ready='1']")
    assert page.get_attribute("body", "data-index") == "0" and page.get_attribute("body", "data-focus") == "0"

    page.keyboard.press("?")
    assert page.is_visible("#ann-help")
    page.keyboard.press("?")
    assert not page.is_visible("#ann-help")

    # item 1: a draft autosaves and survives a reload
    page.keyboard.press("1")
    page.wait_for_selector("#ann-save[data-state='saved']")
    assert page.get_attribute("body", "data-focus") == "1"  # focus moved to the next criterion
    page.reload()
    page.wait_for_selector("body[data-ann-ready='1']")
    assert page.get_attribute("body", "data-status") == "draft"
    assert (
        page.get_attribute(".ann-criterion[data-name='has_answer'] button[data-value='1']", "aria-pressed")
        == "true"
    )
    assert page.get_attribute("body", "data-focus") == "1"  # the first unscored criterion
    page.keyboard.press("4")
    screenshot(page, "annotate-item-1")
    page.keyboard.press("s")
    page.wait_for_selector("body[data-index='1']")

    # item 2 holds markup as model text: shown literally, never run
    assert page.inner_text("#ann-completion") == XSS
    assert page.evaluate("typeof window.__xss") == "undefined"
    page.keyboard.press("k")  # back to item 1, then forward again
    page.wait_for_selector("body[data-index='0'][data-status='submitted']")
    page.keyboard.press("j")
    page.wait_for_selector("body[data-index='1']")
    for key in ("0", "2", "s"):
        page.keyboard.press(key)
    page.wait_for_selector("body[data-index='2']")

    # item 3: an out-of-scale digit is refused with a hint, then scored
    page.keyboard.press("7")
    assert "takes 0 = no, 1 = yes" in page.inner_text("#ann-error")
    for key in ("1", "5", "s"):
        page.keyboard.press(key)
    page.wait_for_selector("body[data-all-done='1']")
    screenshot(page, "annotate-done")

    done = list(
        Assignment.objects.filter(item__task=task).order_by("item__position").values_list("status", "scores")
    )
    assert done == [
        ("submitted", {"has_answer": 1.0, "clarity": 4.0}),
        ("submitted", {"has_answer": 0.0, "clarity": 2.0}),
        ("submitted", {"has_answer": 1.0, "clarity": 5.0}),
    ]
    assert page.js_errors == []
