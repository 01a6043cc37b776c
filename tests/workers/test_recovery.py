"""Where an interrupted run restarts, and what a restarted worker re-queues."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_django import Settings

from tests.workers.helpers import FakeRedis, launch_run, make_project, make_user
from webapp.experiments.models import Run
from webapp.experiments.services import run_mark_started, run_record_checkpoint
from workers.recovery import plan_start, requeue_runs_of_dead_incarnation


def checkpoint(root: Path, step: int, complete: bool = True) -> str:
    path = root / "checkpoints" / f"step-{step:06d}"
    path.mkdir(parents=True)
    if complete:
        (path / "COMPLETE").write_text(f"{step}\n")
    return str(path)


def test_a_first_delivery_starts_fresh_without_touching_stored_rows() -> None:
    plan = plan_start(resume_from="", earlier_attempt=False, checkpoints=[], stored_step=0)
    assert (plan.resume_from, plan.step, plan.truncate) == (None, 0, False)


def test_a_requested_checkpoint_is_resumed_from(tmp_path: Path) -> None:
    path = checkpoint(tmp_path, 6)
    plan = plan_start(resume_from=path, earlier_attempt=True, checkpoints=[(6, path)], stored_step=6)
    assert (plan.resume_from, plan.step, plan.truncate) == (path, 6, True)


def test_an_interrupted_attempt_resumes_from_the_newest_recorded_checkpoint(tmp_path: Path) -> None:
    three, six = checkpoint(tmp_path, 3), checkpoint(tmp_path, 6)
    plan = plan_start(resume_from="", earlier_attempt=True, checkpoints=[(3, three), (6, six)], stored_step=7)
    assert (plan.resume_from, plan.step) == (six, 6)


def test_a_checkpoint_past_the_last_stored_step_is_not_used(tmp_path: Path) -> None:
    three, six = checkpoint(tmp_path, 3), checkpoint(tmp_path, 6)
    # The rows of steps 4..6 were deleted (requeued from 3): resuming at 6 would lose them.
    plan = plan_start(resume_from="", earlier_attempt=True, checkpoints=[(3, three), (6, six)], stored_step=3)
    assert plan.step == 3


def test_a_pruned_or_half_written_checkpoint_falls_back_to_an_older_one(tmp_path: Path) -> None:
    three, nine = checkpoint(tmp_path, 3), checkpoint(tmp_path, 9, complete=False)
    gone = str(tmp_path / "checkpoints" / "step-000006")
    plan = plan_start(
        resume_from=gone, earlier_attempt=True, checkpoints=[(3, three), (6, gone), (9, nine)], stored_step=9
    )
    assert (plan.resume_from, plan.step, plan.truncate) == (three, 3, True)


def test_an_interrupted_attempt_without_any_checkpoint_restarts_from_step_zero() -> None:
    plan = plan_start(resume_from="", earlier_attempt=True, checkpoints=[], stored_step=4)
    assert (plan.resume_from, plan.step, plan.truncate) == (None, 0, True)
    assert "step 0" in plan.note


@pytest.fixture
def running_run(db: None, settings: Settings) -> Run:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    run: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    run_mark_started(run_id=run.pk, worker="gpu@host")
    run_record_checkpoint(run_id=run.pk, step=3, path="/runs/run-1/checkpoints/step-000003")
    Run.objects.filter(pk=run.pk).update(step=4)
    return run


def test_a_restarted_worker_requeues_and_resends_the_runs_it_was_training(
    running_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    monkeypatch.setattr("workers.lease.redis_client", FakeRedis)
    monkeypatch.setattr("workers.lease.holder_alive", lambda run_id, client: False)
    monkeypatch.setattr("webapp.experiments.dispatch.enqueue_training", sent.append)

    assert requeue_runs_of_dead_incarnation("gpu@host") == [running_run.pk]

    run = Run.objects.get(pk=running_run.pk)
    assert (run.status, run.step, run.resume_from) == ("queued", 3, "/runs/run-1/checkpoints/step-000003")
    assert sent == [run.pk]
    assert requeue_runs_of_dead_incarnation("other@host") == []


def test_a_run_whose_lease_is_alive_is_left_to_the_live_worker_with_the_same_name(
    running_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("workers.lease.redis_client", FakeRedis)
    monkeypatch.setattr("workers.lease.holder_alive", lambda run_id, client: True)
    assert requeue_runs_of_dead_incarnation("gpu@host") == []
    assert Run.objects.get(pk=running_run.pk).status == "running"


def test_a_restarted_worker_requeues_and_resends_its_evaluations(
    db: None, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.benchmarks.models import EvalRun
    from webapp.benchmarks.services import benchmark_create, eval_launch, eval_mark_started
    from webapp.experiments.services import experiment_create
    from workers.recovery import requeue_evaluations_of_dead_incarnation

    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    project = make_project(owner)
    experiment = experiment_create(project=project, actor=owner, name="base", config={})
    benchmark = benchmark_create(
        project=project,
        actor=owner,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config={"n_samples": 2, "max_problems": 2},
    )
    first, second = (
        eval_launch(benchmark=benchmark, actor=owner, experiments=[experiment])[0] for _ in range(2)
    )
    eval_mark_started(eval_run_id=first.pk, worker="eval@host")
    eval_mark_started(eval_run_id=second.pk, worker="eval@host")
    EvalRun.objects.filter(pk=second.pk).update(cancel_requested=True)  # it was being cancelled
    sent: list[int] = []
    monkeypatch.setattr("webapp.benchmarks.dispatch.enqueue_evaluation", sent.append)

    assert requeue_evaluations_of_dead_incarnation("other@host") == []
    assert requeue_evaluations_of_dead_incarnation("eval@host") == [first.pk] == sent
    assert EvalRun.objects.get(pk=first.pk).status == "queued"
    assert EvalRun.objects.get(pk=second.pk).status == "cancelled"
