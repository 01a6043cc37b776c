"""A real ``celery worker -Q eval`` process evaluates two reward sources end to end: the chain-arithmetic verifier and
a tiny scalar reward model (tiny:chain's weights with a fresh one-output head, in a folder under a model root). The
API answers 202; the worker samples the Best-of-N benchmark once with tiny:chain, scores it with both sources, scores
a run's pairs and the judge audit, and stores per-source figures the page and the exports then read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.trainer.rewards.rm_helpers import make_reward_model
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
from workers.celery_app import app
from workers.tasks_reward_eval import run_reward_evaluation

pytestmark = pytest.mark.timeout(600)


def test_the_reward_evaluation_task_goes_to_the_eval_queue_and_is_acknowledged_late() -> None:
    assert run_reward_evaluation.acks_late and run_reward_evaluation.reject_on_worker_lost
    assert app.amqp.router.route({}, run_reward_evaluation.name)["queue"].name == "eval"


@pytest.fixture(scope="module")
def rm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Under pytest's base temporary folder, which tests/workers/conftest.py makes a model root."""
    from trainer.models.tiny_model import resolve_model_path

    return make_reward_model(
        Path(resolve_model_path("tiny:chain")), tmp_path_factory.getbasetemp() / "chain-rm"
    )


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
        for g in range(6) for i in range(2)
    ]  # fmt: skip
    run_record_step(run_id=run.pk, step=1, max_steps=1, metrics={}, rollouts=records)
    return run.pk


@pytest.mark.slow
def test_a_worker_evaluates_a_verifier_and_a_tiny_reward_model_side_by_side(
    real_services: None, tmp_path: Path, settings: Any, rm_folder: Path
) -> None:
    owner = make_user("alice")
    project = make_project(owner)
    run_id = _run_with_pairs(owner, project, settings)
    body = {
        "sources": [
            {"name": "chain_arithmetic"},
            {
                "name": "reward_model",
                "params": {"model": str(rm_folder), "micro_batch_size": 16},
                "label": "tiny_rm",
            },
        ],
        "pairwise": {"run": run_id},
        "best_of_n": {"benchmark": "builtin:chain_arithmetic", "policy": "tiny:chain", "n": 8, "problems": 8},
        "audit": True,
        "audit_problems": 2,
        "seed": 3,
    }
    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "worker.log", "reval@%h", queues="eval"
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
        csv_text = client.get(f"/api/reward-evaluations/{job_id}/export/csv/").content.decode()
    finally:
        worker.stop()
        clear_queues(redis_url())
    assert detail["status"] == JobStatus.SUCCEEDED, detail["error"] + worker.log()
    assert detail["attempts"] == 1
    result = detail["result"]
    verifier, rm = result["sources"]
    assert (verifier["label"], rm["label"]) == ("chain_arithmetic", "tiny_rm")
    # Pairs of the run: the verifier prefers every correct completion; the RM's accuracy is some share of 6 pairs.
    assert verifier["pairwise"]["accuracy"] == 1.0 and verifier["pairwise"]["scored"] == 6
    assert rm["pairwise"]["scored"] + rm["pairwise"]["absent"] == 6
    # Best-of-N: N = 1, 2, 4, 8 over 8 problems x 8 samples; the oracle verifier choosing is the oracle itself.
    bon = result["best_of_n"]
    assert bon["ns"] == [1, 2, 4, 8] and bon["problems"] == 8 and bon["policy"] == "tiny:chain"
    curve = verifier["best_of_n"]
    assert curve["best_of_n"] == pytest.approx(curve["oracle"])
    assert curve["random"][0] == pytest.approx(curve["oracle"][0])  # at N = 1 all three are the mean accuracy
    assert curve["oracle"] == sorted(curve["oracle"])
    rm_curve = rm["best_of_n"]
    assert rm_curve["samples_per_problem"] == 8 and rm_curve["absent"] == 0
    assert all(
        low <= v <= high
        for v, (low, high) in zip(rm_curve["best_of_n"], rm_curve["best_of_n_ci"], strict=True)
    )
    assert all(r <= o + 1e-9 for r, o in zip(rm_curve["best_of_n"], rm_curve["oracle"], strict=True))
    # The audit: the exact verifier accepts no master key; the RM's threshold comes from its Best-of-N scores.
    assert verifier["audit"]["fpr"] == 0.0 and verifier["audit"]["problems"] == 2
    assert rm["audit"]["threshold"] is not None or rm["audit"]["fpr"] is None
    assert rm["scored"] > 0 and rm["latency_s_per_completion"] > 0
    assert csv_text.splitlines()[0].startswith("source,name,pairwise_accuracy")
    assert len(csv_text.strip().splitlines()) == 3
    assert str(rm_folder) in str(
        RewardJob.objects.get(pk=job_id).config
    )  # a folder given by path stays as given
