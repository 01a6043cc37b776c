"""Reviewing annotations in a browser.

1. "Done means": dana and erin have scored a task's items and disagree on some; alice (the owner) opens the
   disagreement view, the most disputed item is first, she opens it, sees both annotators' scores side by
   side, sets the final scores, goes back: the item shows resolved (and hides with the toggle); the export
   carries the final scores.
2. Machine vs people for a scorer that is not the training rubric: a reward component picked on the task
   page shows alpha, Spearman, Pearson and n; then the items are scored with a saved verifier by a real
   worker on the default queue, and its agreement is shown once the job ends.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.browser.test_content_security_policy import watch_csp
from tests.workers.helpers import CeleryWorker, clear_queues, redis_url, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

# position -> annotator -> (has_answer, clarity): item 3 (position 2) is split on both criteria
SCORES = {
    0: {"dana": (1, 4), "erin": (1, 4)},
    1: {"dana": (0, 2), "erin": (1, 2)},
    2: {"dana": (0, 1), "erin": (1, 5)},
    3: {"dana": (0, 3), "erin": (0, 4)},
}


def seed_task() -> Any:
    """alice's run with four rollouts (exact reward 1, 0, 1, 0), a rubric, and a task dana and erin scored."""
    from tests.browser.helpers import seed_run, store_step
    from tests.webapp.helpers import rollout_record
    from tests.workers.helpers import make_user
    from webapp.annotation.models import Assignment
    from webapp.annotation.services import assignment_submit, task_create_from_run
    from webapp.rubrics.models import Criterion, Rubric
    from webapp.teams.models import Membership

    run = seed_run()
    project = run.experiment.project
    people = {name: make_user(name) for name in ("dana", "erin")}
    for person in people.values():
        Membership.objects.create(project=project, user=person, role="annotator")
    rubric = Rubric.objects.create(project=project, name="quality")
    Criterion.objects.create(rubric=rubric, position=0, name="has_answer", scale="binary", scorer="rule",
                             rule={"type": "regex", "params": {"pattern": r"\d"}})  # fmt: skip
    Criterion.objects.create(
        rubric=rubric, position=1, name="clarity", scale="likert5", min_value=1, max_value=5, scorer="judge"
    )
    records = [
        rollout_record(1, 0, s, completion=f"The answer is {4 if s % 2 == 0 else 5}", answer="4",
                       prompt=f"<b>Question {s}</b>: 2+2=", rewards={"exact": 1.0 if s % 2 == 0 else 0.0})
        for s in range(4)
    ]  # fmt: skip
    store_step(run, 1, records)
    task = task_create_from_run(run=run, rubric=rubric, actor=run.created_by, sampling={"n": 4},
                                annotators=["dana", "erin"], annotators_per_item=2)  # fmt: skip
    for item in task.items.order_by("position"):
        for name, (answer, clarity) in SCORES[item.position].items():
            work = Assignment.objects.get(item=item, annotator=people[name])
            comment = "no number I can see" if (name, item.position) == ("dana", 2) else ""
            assignment_submit(assignment=work, actor=people[name], scores={"has_answer": answer, "clarity": clarity},
                              comment=comment)  # fmt: skip
    return task


def test_the_owner_resolves_the_most_disputed_item_and_the_export_has_it(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    task = seed_task()
    disputed = task.items.get(position=2)
    refused = watch_csp(page)
    sign_in("alice", PASSWORD)
    page.goto(f"/annotation/{task.pk}/")
    page.click("#ann-disagreements-link")
    page.wait_for_selector("#ann-disagreements tbody tr")
    first = page.locator("#ann-disagreements tbody tr").first
    assert (
        first.get_attribute("data-item") == str(disputed.pk) and first.get_attribute("data-state") == "open"
    )
    assert page.inner_text("#ann-counts [data-count='disputed']") == "3 with different scores"
    screenshot(page, "01-disagreements")

    first.locator("a.ann-review-link").click()
    page.wait_for_selector("#ann-review-scores")
    assert "1 of 4 in the disagreement ranking" in page.inner_text("#ann-review-position")
    assert page.inner_text("#ann-review-prompt") == "<b>Question 2</b>: 2+2="  # model text shown literally
    clarity = page.locator("#ann-review-scores tr[data-criterion='clarity'] td[data-score]")
    assert clarity.all_inner_texts() == ["1", "5"]  # dana, erin
    assert page.locator("#ann-review-scores th[data-annotator]").all_inner_texts() == ["dana", "erin"]
    assert "no number I can see" in page.inner_text("#ann-review-comments")
    for criterion, score in (("has_answer", "1"), ("clarity", "3")):
        form = page.locator(f".ann-adjudicate-form[data-criterion='{criterion}']")
        form.locator("input[name=score]").fill(score)
        form.locator("input[name=note]").fill("the middle of the two" if criterion == "clarity" else "")
        form.locator("button[name=set]").click()
        page.wait_for_load_state()
    page.wait_for_selector("#ann-review-adjudicated")
    assert page.inner_text("#ann-review-scores tr[data-criterion='clarity'] td[data-final]") == "3"
    screenshot(page, "02-review-adjudicated")

    page.click("#ann-review-next")  # on through the ranking: the next most disputed
    page.wait_for_selector("#ann-review-scores")
    assert "2 of 4 in the disagreement ranking" in page.inner_text("#ann-review-position")
    page.click("#ann-review-back")
    page.wait_for_selector("#ann-disagreements tbody tr")
    row = page.locator(f"#ann-disagreements tr[data-item='{disputed.pk}']")
    assert row.get_attribute("data-state") == "resolved"
    assert page.inner_text("#ann-counts [data-count='resolved']") == "1 resolved"
    page.check("#ann-hide-resolved")
    page.click("#ann-filter button[type=submit]")
    page.wait_for_selector("#ann-counts [data-count='shown']")
    assert page.locator(f"#ann-disagreements tr[data-item='{disputed.pk}']").count() == 0
    screenshot(page, "03-disagreements-resolved-hidden")
    page.uncheck("#ann-hide-resolved")
    page.select_option("#ann-rank-by", "clarity")  # one criterion: on its scale, final scores set in the row
    page.click("#ann-filter button[type=submit]")
    page.wait_for_selector("#ann-disagreements form.ann-inline-adjudicate")
    row = page.locator(f"#ann-disagreements tr[data-item='{disputed.pk}']")
    assert row.get_attribute("data-rank") == "1" and row.locator("[data-figure='spread']").inner_text() == "4"
    assert row.locator("input[name=score]").input_value() == "3"
    screenshot(page, "03b-disagreements-by-clarity")

    exported = page.request.get(f"/api/annotation-tasks/{task.pk}/export.jsonl")
    assert exported.ok
    records = [json.loads(line) for line in exported.text().splitlines()]
    mine = [r for r in records if r["item_id"] == disputed.pk]
    assert len(mine) == 2 and all(
        r["adjudicated"] and r["final_scores"] == {"has_answer": 1.0, "clarity": 3.0} for r in mine
    )
    assert all(not r["adjudicated"] for r in records if r["item_id"] != disputed.pk)

    # dana's work against erin's and the final scores, from the task's progress table
    page.goto(f"/annotation/{task.pk}/")
    page.click("#ann-progress a:has-text('dana')")
    page.wait_for_selector("#ann-annotator-items")
    assert page.locator("#ann-annotator-items tbody tr").count() == 4
    cell = page.locator(f"#ann-annotator-items tr[data-item='{disputed.pk}'] td[data-criterion='clarity']")
    assert "vs 5 (1)" in cell.inner_text() and "final 3" in cell.inner_text()
    screenshot(page, "04-annotator-work")
    assert page.js_errors == [] and refused == []


@pytest.fixture
def default_worker(real_services: None, tmp_path: Path) -> Iterator[CeleryWorker]:
    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "default-worker.log", "ann@%h", queues="default"
    ).start()
    yield worker
    worker.stop()
    clear_queues(redis_url())


def test_agreement_of_a_scorer_that_is_not_the_training_rubric(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    default_worker: CeleryWorker,
) -> None:
    import krippendorff
    import numpy as np
    from django.template.defaultfilters import floatformat

    from webapp.annotation.models import ScoringJob
    from webapp.verification.services import verifier_definition_create

    task = seed_task()
    verifier_definition_create(project=task.project, actor=task.created_by, name="last number", verifier="exact",
                               params={"extract": "last_number"})  # fmt: skip
    machine, people = [1.0, 0.0, 1.0, 0.0], [1.0, 0.5, 0.5, 0.0]  # exact reward; mean has_answer per item
    alpha = krippendorff.alpha(reliability_data=np.array([machine, people]), level_of_measurement="interval")
    pearson = float(np.corrcoef(machine, people)[0, 1])  # 1 / sqrt(2)

    refused = watch_csp(page)
    sign_in("alice", PASSWORD)
    page.goto(f"/annotation/{task.pk}/")
    page.select_option("#ann-scorer", "component:exact")  # a reward component, not the task's rubric
    page.wait_for_selector("#ann-machine-result[data-scorer='component:exact']")
    page.select_option("#ann-criterion", "has_answer")
    page.wait_for_selector("#ann-machine-result[data-criterion='has_answer']")
    result = page.locator("#ann-machine-result")
    assert result.locator("[data-figure='items']").inner_text() == "4"
    assert result.locator("[data-figure='alpha']").inner_text() == floatformat(alpha, 3)
    assert result.locator("[data-figure='pearson']").inner_text() == floatformat(pearson, 3)
    screenshot(page, "01-agreement-panel")

    page.select_option("#ann-score-form select", label="last number v1 (exact)")
    page.click("#ann-score-form button[type=submit]")
    page.wait_for_selector("#ann-jobs tr[data-job]")
    job = ScoringJob.objects.get()
    try:  # the page polls the job and reloads when the worker has scored the four items
        page.wait_for_selector(f"#ann-jobs tr[data-job='{job.pk}'][data-status='succeeded']", timeout=90_000)
    except Exception as err:
        job.refresh_from_db()
        raise AssertionError(
            f"{err}\njob: {job.status} {job.error}\nworker log:\n{default_worker.log()}"
        ) from None
    # the poller marks the row, then reloads the page, whose scorer list then offers the job's scores
    option = f"#ann-scorer option[value='job:{job.pk}:reward']"
    try:
        page.wait_for_selector(option, state="attached", timeout=60_000)
    except Exception as err:
        offered = page.eval_on_selector_all("#ann-scorer option", "os => os.map(o => o.value)")
        raise AssertionError(f"{err}\nthe page offers: {offered}; at {page.url}") from None
    page.select_option("#ann-scorer", f"job:{job.pk}:reward")
    page.wait_for_selector(f"#ann-machine-result[data-scorer='job:{job.pk}:reward']")
    if page.get_attribute("#ann-machine-result", "data-criterion") != "has_answer":
        page.select_option("#ann-criterion", "has_answer")
        page.wait_for_selector("#ann-machine-result[data-criterion='has_answer']")
    assert page.locator("#ann-machine-result [data-figure='items']").inner_text() == "4"
    assert page.locator("#ann-machine-result [data-figure='pearson']").inner_text() == floatformat(pearson, 3)
    screenshot(page, "02-agreement-after-scoring-job")
    assert page.js_errors == [] and refused == []
