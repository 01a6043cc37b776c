"""A run with ``training.num_processes: 2`` through the web stack (issue 8): the Celery task calls ``train``,
which launches two torchrun ranks on CPU (gloo) and relays rank 0's events to DjangoRunSink, so metrics,
rollouts and checkpoints land in the database exactly as for a 1-process run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import (
    CeleryWorker,
    FakeRedis,
    launch_run,
    make_project,
    make_user,
    tiny_experiment_config,
    wait_for,
)
from webapp.experiments.models import Checkpoint, MetricPoint, Rollout, Run, RunEvent
from webapp.experiments.services import run_cancel
from workers.tasks import run_training

pytestmark = pytest.mark.slow


def distributed_config(model_dir: Path, max_steps: int) -> dict[str, Any]:
    config = tiny_experiment_config(model_dir, max_steps=max_steps)
    config["training"]["num_processes"] = 2
    return config


def test_the_training_task_runs_two_processes_and_stores_every_step(
    transactional_db: None,
    settings: Settings,
    tmp_path: Path,
    random_model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("workers.lease.redis_client", FakeRedis)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    settings.RLVR_ENQUEUE = False
    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    owner = make_user("alice")
    config = distributed_config(random_model_dir, max_steps=2)
    config["training"]["memory_budget_gb"] = 2.0  # each rank plans; rank 0's note reaches the run's events
    run: Run = launch_run(owner, make_project(owner), config)

    assert run_training.apply(args=(run.pk,)).get() == "succeeded"

    run.refresh_from_db()
    assert (run.status, run.step) == ("succeeded", 2)
    assert sorted(set(MetricPoint.objects.filter(run=run).values_list("step", flat=True))) == [1, 2]
    assert MetricPoint.objects.filter(run=run, key="rollout/reward_mean").count() == 2
    rollouts = Rollout.objects.filter(run=run, step=1)
    assert rollouts.count() == 2 * 4  # both ranks' groups, gathered by rank 0
    assert set(rollouts.values_list("group", flat=True)) == {0, 1}
    assert Checkpoint.objects.filter(run=run, step=2).exists()
    assert run.final_metrics["budget/rollouts_used"] == 8.0
    assert not RunEvent.objects.filter(run=run, kind="failed").exists()
    notes = list(RunEvent.objects.filter(run=run, kind="trainer").values_list("message", flat=True))
    assert any(n.startswith("launching 2 data-parallel processes") for n in notes), notes
    assert any(n.startswith("memory plan (estimated on CPU) for a 2.00 GiB budget") for n in notes), notes


@pytest.mark.timeout(300)
def test_a_real_worker_trains_a_two_process_run(
    start_worker: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    owner = make_user("alice")
    run = launch_run(owner, make_project(owner), distributed_config(random_model_dir, max_steps=3))
    worker = start_worker("dist@%h")
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status in ("succeeded", "failed"), 240, "the run to finish", worker
    )

    run.refresh_from_db()
    assert (run.status, run.step, run.error_message) == ("succeeded", 3, "")
    assert sorted(set(MetricPoint.objects.filter(run=run).values_list("step", flat=True))) == [1, 2, 3]
    assert Rollout.objects.filter(run=run).count() == 3 * 2 * 4
    assert Checkpoint.objects.filter(run=run, step=3).exists()


@pytest.mark.timeout(300)
def test_cancelling_a_two_process_run_on_a_real_worker_stops_both_ranks_with_a_checkpoint(
    start_worker: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    owner = make_user("alice")
    run = launch_run(owner, make_project(owner), distributed_config(random_model_dir, max_steps=500))
    worker = start_worker("dist-cancel@%h")
    wait_for(lambda: Run.objects.get(pk=run.pk).step >= 2, 180, "step 2", worker)

    run_cancel(run=Run.objects.get(pk=run.pk), actor=owner)
    wait_for(lambda: Run.objects.get(pk=run.pk).status != "running", 60, "the run to stop", worker)

    run.refresh_from_db()
    assert run.status == "cancelled" and 2 <= run.step < 500
    assert Checkpoint.objects.filter(run=run, step=run.step).exists()  # resumable from where it stopped
