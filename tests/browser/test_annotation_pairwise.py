"""Pairwise preferences in a real browser: the owner creates a pairwise task from the run's "Annotate"
entry, two annotators judge every pair with the keyboard only (a draft survives a reload, a reason is
typed after r, one pair is a tie, one is split), the owner adjudicates the split pair, and the TRL export
is downloaded and checked line by line. Completions holding <script> and <img onerror> show as text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import seed_run, store_step
from tests.webapp.helpers import rollout_record

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

SCRIPT = "<script>window.__xss=1</script> 4"
IMG = '<img src=x onerror="window.__xss=2"> 5'


def seed() -> Any:
    """alice's run with one step of three prompts, two completions each (one right, one wrong), and dana
    and erin as annotators."""
    from tests.workers.helpers import make_user
    from webapp.teams.models import Membership

    run = seed_run()
    project = run.experiment.project
    for name in ("dana", "erin"):
        Membership.objects.create(project=project, user=make_user(name), role="annotator")
    records = [
        rollout_record(1, g, s, prompt=f"{g}+{g + 2}=",
                       completion=(SCRIPT if s == 0 else IMG) if g == 0 else f" answer {g}-{s}",
                       reward=1.0 - s, correct=s == 0)
        for g in range(3) for s in range(2)
    ]  # fmt: skip
    store_step(run, 1, records)
    return run


def judge_all(page: Any, keys: list[list[str]]) -> None:
    """Judge the queue in order: each pair gets its keys, the last of which submits."""
    for index, pair_keys in enumerate(keys):
        page.wait_for_selector(f"body[data-index='{index}']")
        for key in pair_keys:
            page.keyboard.press(key)
    page.wait_for_selector("body[data-all-done='1']")


def test_two_annotators_judge_pairs_with_the_keyboard_and_the_owner_adjudicates_and_exports(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.annotation.models import AnnotationTask, Assignment

    run = seed()

    # the owner: the run's "Annotate" entry offers pairwise preferences next to rubric scoring
    sign_in("alice", "pw-alice-123")
    page.goto(f"/runs/{run.pk}/annotate/new/")
    page.click("#ann-kind-pairwise")
    page.wait_for_selector("#pw-new")
    page.fill("input[name=name]", "prefs")
    page.fill("input[name=n]", "3")
    page.check("input[name=annotators][value=dana]")
    page.check("input[name=annotators][value=erin]")
    page.click("#pw-new button[type=submit]")
    page.wait_for_selector("#ann-sampling")
    task = AnnotationTask.objects.get(name="prefs")
    items = list(task.items.order_by("position"))
    assert task.kind == "pairwise" and len(items) == 3 and all(i.prompt.endswith("=") for i in items)
    xss_position = next(i.position for i in items if "<script>" in i.completion + i.completion_right)

    # dana: a draft autosaves and survives a reload; r types a reason; Enter and s submit
    page.context.clear_cookies()
    sign_in("dana", "pw-dana-123")
    page.goto(f"/annotation/{task.pk}/annotate/")
    page.wait_for_selector("body[data-ann-ready='1']")
    page.keyboard.press("?")
    assert page.is_visible("#pw-help")
    page.keyboard.press("Escape")
    assert not page.is_visible("#pw-help")
    page.keyboard.press("1")
    page.wait_for_selector("#pw-save[data-state='saved']")
    page.reload()
    page.wait_for_selector("body[data-ann-ready='1']")
    assert (
        page.get_attribute("body", "data-status") == "draft"
        and page.get_attribute("body", "data-choice") == "left"
    )
    assert page.get_attribute("#pw-choices button[data-choice='left']", "aria-pressed") == "true"
    page.keyboard.press("r")
    page.keyboard.type("left shows its working")
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-index='1']")
    page.keyboard.press("k")  # back to the submitted pair, then on again
    page.wait_for_selector("body[data-index='0'][data-status='submitted']")
    page.keyboard.press("j")
    page.wait_for_selector("body[data-index='1']")
    page.keyboard.press("t")
    page.keyboard.press("s")
    page.wait_for_selector("body[data-index='2']")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("s")
    page.wait_for_selector("body[data-all-done='1']")
    assert page.inner_text("#pw-count-submitted") == "3 submitted"

    # the pair with markup shows it as text, never run
    page.goto(f"/annotation/{task.pk}/annotate/?assignment="
              f"{Assignment.objects.get(item=items[xss_position], annotator__username='dana').pk}")  # fmt: skip
    page.wait_for_selector("body[data-ann-ready='1']")
    shown = page.inner_text("#pw-left") + page.inner_text("#pw-right")
    assert SCRIPT in shown and IMG in shown
    assert page.evaluate("typeof window.__xss") == "undefined"
    screenshot(page, "pairwise-annotate")

    # erin: right, tie, right: the first and last pairs are split (dana said left)
    page.context.clear_cookies()
    sign_in("erin", "pw-erin-123")
    page.goto(f"/annotation/{task.pk}/annotate/")
    page.wait_for_selector("body[data-ann-ready='1']")
    judge_all(page, [["ArrowRight", "s"], ["t", "Enter"], ["2", "s"]])
    done = {
        (a.item.position, a.annotator.username): (a.status, a.choice)
        for a in Assignment.objects.filter(item__task=task).select_related("item", "annotator")
    }
    assert done == {
        (0, "dana"): ("submitted", "left"), (0, "erin"): ("submitted", "right"),
        (1, "dana"): ("submitted", "tie"), (1, "erin"): ("submitted", "tie"),
        (2, "dana"): ("submitted", "left"), (2, "erin"): ("submitted", "right"),
    }  # fmt: skip
    assert (
        Assignment.objects.get(item=items[0], annotator__username="dana").comment == "left shows its working"
    )

    # the owner adjudicates the split pairs: the first goes right, the last left
    page.context.clear_cookies()
    sign_in("alice", "pw-alice-123")
    page.goto(f"/annotation/{task.pk}/disagreements/")
    assert page.inner_text("#pw-disagreement-counts").startswith(
        "2 pairs with differing choices, 0 adjudicated"
    )
    for position, choice in ((0, "right"), (2, "left")):
        card = f".pw-disagreement[data-position='{position}']"
        page.select_option(f"{card} select[name=choice]", choice)
        page.fill(f"{card} input[name=note]", f"decided {choice}")
        page.click(f"{card} button.primary")
        page.wait_for_selector(f"{card} .badge[data-final='{choice}']")
    screenshot(page, "pairwise-adjudicated")

    # the task page counts what the export leaves out; the TRL export is downloaded
    page.goto(f"/annotation/{task.pk}/")
    summary = page.inner_text("#pw-summary-line")
    assert (
        summary == "2 preference pairs exported (1 left, 1 right); left out: 1 tie, 0 both bad, 0 unresolved."
    )
    screenshot(page, "pairwise-task-page")
    with page.expect_download() as info:
        page.click("#pw-export-trl")
    lines = [json.loads(line) for line in Path(info.value.path()).read_text(encoding="utf-8").splitlines()]
    assert lines == [
        {"prompt": items[0].prompt, "chosen": items[0].completion_right, "rejected": items[0].completion},
        {"prompt": items[2].prompt, "chosen": items[2].completion, "rejected": items[2].completion_right},
    ]
    assert page.js_errors == []
