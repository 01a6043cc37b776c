"""The services the Celery task calls: started, finished, failed, lost."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.webapp.helpers import record_steps
from webapp.experiments.models import MetricPoint, Run, RunEvent
from webapp.experiments.selectors import run_latest_checkpoint, run_should_stop
from webapp.experiments.services import (
    run_cancel,
    run_fail,
    run_finish,
    run_log_event,
    run_mark_started,
    run_record_checkpoint,
    run_requeue_after_worker_loss,
)


def test_marking_a_run_started_records_the_worker_and_counts_the_attempt(run: Run) -> None:
    started = run_mark_started(run_id=run.pk, worker="celery@gpu-1")
    assert (started.status, started.worker, started.attempts) == ("running", "celery@gpu-1", 1)
    assert started.started_at is not None


def test_a_second_start_keeps_the_first_start_time(run: Run) -> None:
    first = run_mark_started(run_id=run.pk, worker="a").started_at
    again = run_mark_started(run_id=run.pk, worker="b")
    assert (again.started_at, again.attempts, again.worker) == (first, 2, "b")


def test_a_run_cancelled_while_queued_is_not_started(run: Run, alice: User) -> None:
    run_cancel(run=run, actor=alice)
    assert run_mark_started(run_id=run.pk, worker="a").status == "cancelled"


def test_a_run_should_stop_once_a_cancel_is_requested(run: Run, alice: User) -> None:
    run_mark_started(run_id=run.pk, worker="a")
    assert run_should_stop(run_id=run.pk) is False
    run_cancel(run=run, actor=alice)
    assert run_should_stop(run_id=run.pk) is True


def test_finishing_records_the_status_and_final_metrics(run: Run) -> None:
    run_mark_started(run_id=run.pk, worker="a")
    run_finish(
        run_id=run.pk, status="succeeded", final_metrics={"rollout/accuracy": 0.9, "actor/kl": float("nan")}
    )
    run.refresh_from_db()
    assert (run.status, run.final_metrics) == ("succeeded", {"rollout/accuracy": 0.9, "actor/kl": None})
    assert run.finished_at is not None


def test_finish_refuses_failed_as_a_status(run: Run) -> None:
    with pytest.raises(ValueError, match="use run_fail"):
        run_finish(run_id=run.pk, status="failed", final_metrics={})


def test_a_failed_run_keeps_its_message_and_the_end_of_its_traceback(run: Run) -> None:
    traceback_text = "\n".join(f"line {i}" for i in range(200))
    run_fail(run_id=run.pk, message="CUDA out of memory", traceback_text=traceback_text)
    run.refresh_from_db()
    assert (run.status, run.error_message) == ("failed", "CUDA out of memory")
    lines = run.traceback.splitlines()
    assert (len(lines), lines[0], lines[-1]) == (50, "line 150", "line 199")
    assert RunEvent.objects.filter(run=run, level="error", kind="failed").exists()


def test_a_lost_worker_requeues_the_run_from_its_last_checkpoint(run: Run) -> None:
    run_mark_started(run_id=run.pk, worker="a")
    record_steps(run, range(1, 6))
    run_record_checkpoint(run_id=run.pk, step=4, path="/ckpt/4")
    run_requeue_after_worker_loss(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.resume_from, run.step) == ("queued", "/ckpt/4", 4)
    assert set(MetricPoint.objects.filter(run=run).values_list("step", flat=True)) == {1, 2, 3, 4}
    assert RunEvent.objects.filter(run=run, kind="worker_lost", level="warning").exists()


def test_a_lost_worker_with_no_checkpoint_requeues_from_the_start(run: Run) -> None:
    run_mark_started(run_id=run.pk, worker="a")
    record_steps(run, range(1, 3))
    run_requeue_after_worker_loss(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.resume_from, run.step) == ("queued", "", 0)


def test_a_lost_worker_of_a_run_being_cancelled_ends_it_cancelled(run: Run, alice: User) -> None:
    run_mark_started(run_id=run.pk, worker="a")
    run_cancel(run=run, actor=alice)
    run_requeue_after_worker_loss(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "cancelled"


def test_requeueing_a_run_that_is_not_running_changes_nothing(run: Run) -> None:
    run_fail(run_id=run.pk, message="x", traceback_text="")
    run_requeue_after_worker_loss(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "failed"


def test_the_latest_checkpoint_is_the_one_with_the_highest_step(run: Run) -> None:
    assert run_latest_checkpoint(run_id=run.pk) is None
    run_record_checkpoint(run_id=run.pk, step=10, path="/10")
    run_record_checkpoint(run_id=run.pk, step=2, path="/2")
    checkpoint = run_latest_checkpoint(run_id=run.pk)
    assert checkpoint is not None and checkpoint.path == "/10"


def test_workers_can_log_events_with_a_step(run: Run) -> None:
    run_log_event(run_id=run.pk, level="warning", kind="slow", message="step took 90 s", step=3)
    event = RunEvent.objects.filter(run=run).last()
    assert event is not None and (event.level, event.kind, event.step) == ("warning", "slow", 3)
