"""A real ``celery worker -Q eval`` process evaluates two saved rule-only rubrics side by side: one aggregated by
weighted sum, one by rank (RLVR^2), both scoring correctness with the chain-arithmetic verifier and the '####' format.
The API answers 202 for ``{"rubric": id}``; the worker scores a run's pairs (a rank rubric within each pair), the
Best-of-N samples of tiny:chain-teacher (within each problem) and the judge audit (the weighted-sum rubric against its
threshold; the rank one has no absolute score and says so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.webapp.helpers import rollout_record
from tests.workers.helpers import (
    CeleryWorker,
    clear_queues,
    make_project,
    make_user,
    redis_url,
    wait_for,
    worker_env,
)
from webapp.experiments.services import experiment_create, run_launch, run_record_step
from webapp.rewards.models import JobStatus, RewardJob
from webapp.rubrics.services import rubric_create

pytestmark = pytest.mark.timeout(600)

CRITERIA: list[dict[str, Any]] = [
    {"name": "correct", "scorer": "rule", "weight": 3.0,
     "rule": {"type": "verifier", "params": {"name": "chain_arithmetic"}}},
    {"name": "format", "scorer": "rule", "rule": {"type": "regex", "params": {"pattern": "####"}}},
]  # fmt: skip


def _run_with_pairs(owner: Any, project: Any, settings: Any) -> int:
    experiment = experiment_create(
        project=project, actor=owner, name="exp", config={"model": {"name_or_path": "tiny:chain"}}
    )
    settings.RLVR_ENQUEUE = False
    run = run_launch(experiment=experiment, actor=owner)  # stays queued: no training worker here
    settings.RLVR_ENQUEUE = True
    records = [
        rollout_record(1, g, i, prompt=f"{g}+{g}=", answer=str(2 * g),
                       completion=f"#### {2 * g}" if i == 0 else f"#### {2 * g + 1}", correct=i == 0)
        for g in range(4) for i in range(2)
    ]  # fmt: skip
    run_record_step(run_id=run.pk, step=1, max_steps=1, metrics={}, rollouts=records)
    return run.pk


@pytest.mark.slow
def test_a_worker_evaluates_rule_only_rubrics_side_by_side(
    real_services: None, tmp_path: Path, settings: Any
) -> None:
    owner = make_user("alice")
    project = make_project(owner)
    run_id = _run_with_pairs(owner, project, settings)
    summed = rubric_create(project=project, actor=owner, name="Right and formatted", criteria=CRITERIA)
    ranked = rubric_create(project=project, actor=owner, name="Ranked", aggregation="rank", criteria=CRITERIA)
    body = {
        "sources": [{"rubric": summed.pk}, {"rubric": ranked.pk}],
        "pairwise": {"run": run_id},
        # the teacher as the policy: right on most problems, so the curve has something to rank on any build
        # (the student's ~9% left all 24 samples wrong on some machines' builds of it)
        "best_of_n": {
            "benchmark": "builtin:chain_arithmetic",
            "policy": "tiny:chain-teacher",
            "n": 4,
            "problems": 6,
        },
        "audit": True,
        "audit_problems": 2,
        "seed": 1,
    }
    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "worker.log", "rubric@%h", queues="eval"
    ).start()
    try:
        client = APIClient()
        client.force_authenticate(user=owner)
        resp = client.post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")
        assert resp.status_code == 202, resp.json()
        job_id = resp.json()["id"]
        wait_for(
            lambda: RewardJob.objects.get(pk=job_id).status not in ("queued", "running"),
            500,
            "the evaluation",
            worker,
        )
        detail = client.get(resp.json()["url"]).json()
    finally:
        worker.stop()
        clear_queues(redis_url())
    assert detail["status"] == JobStatus.SUCCEEDED, detail["error"] + worker.log()
    summed_row, ranked_row = detail["result"]["sources"]
    assert (summed_row["label"], ranked_row["label"]) == ("Right and formatted", "Ranked")
    assert summed_row["origin"] == {"rubric": summed.pk, "name": "Right and formatted"}
    # The run's pairs: both rubrics prefer every correct completion (the rank one within each pair: 1 against 0).
    for row in (summed_row, ranked_row):
        assert row["pairwise"]["accuracy"] == 1.0 and row["pairwise"]["scored"] == 4, row["pairwise"]
        assert row["scored"] > 0 and row["latency_s_per_completion"] > 0
    # Best-of-N: 'correct' outweighs 'format', so either rubric's pick is right whenever a sample is: the oracle.
    for row in (summed_row, ranked_row):
        curve = row["best_of_n"]
        assert curve["ns"] == [1, 2, 4] and curve["absent"] == 0
        assert curve["best_of_n"] == pytest.approx(curve["oracle"])
        assert curve["oracle"][-1] > 0  # some sample is right, so the curve says something
    # The audit: master keys are neither right nor formatted, so the weighted-sum rubric accepts none of them; the
    # rank rubric has no absolute score.
    assert summed_row["audit"]["fpr"] == 0.0 and summed_row["audit"]["threshold"] is not None
    assert ranked_row["audit"]["fpr"] is None and "rank" in ranked_row["audit"]["note"]


@pytest.mark.slow
def test_a_judged_criterion_the_judge_model_never_answers_leaves_the_rubric_absent_never_zero(
    real_services: None, tmp_path: Path, settings: Any
) -> None:
    """The judge criterion's model (tiny:chain, loaded on the worker's CPU) writes something on every pair, but the
    parse pattern can only read an empty string: every response is unscored, so every pair is absent (counting the
    criterion 0 would have tied every pair instead)."""
    owner = make_user("alice")
    project = make_project(owner)
    run_id = _run_with_pairs(owner, project, settings)
    judged = {"name": "clear", "scorer": "judge", "scale": "likert5",
              "judge": {"prompt_template": "Rate: {completion}\nScore:", "parse_pattern": "(x*)"}}  # fmt: skip
    rubric = rubric_create(project=project, actor=owner, name="Judged", criteria=[*CRITERIA, judged])
    body = {"sources": [{"rubric": rubric.pk, "judge_model": "tiny:chain"}], "pairwise": {"run": run_id}}
    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "worker.log", "judged@%h", queues="eval"
    ).start()
    try:
        client = APIClient()
        client.force_authenticate(user=owner)
        resp = client.post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")
        assert resp.status_code == 202, resp.json()
        job_id = resp.json()["id"]
        wait_for(
            lambda: RewardJob.objects.get(pk=job_id).status not in ("queued", "running"),
            300,
            "the evaluation",
            worker,
        )
        detail = client.get(resp.json()["url"]).json()
    finally:
        worker.stop()
        clear_queues(redis_url())
    assert detail["status"] == JobStatus.SUCCEEDED, detail["error"] + worker.log()
    (row,) = detail["result"]["sources"]
    assert row["pairwise"]["absent"] == 4 and row["pairwise"]["accuracy"] is None and row["scored"] == 8
