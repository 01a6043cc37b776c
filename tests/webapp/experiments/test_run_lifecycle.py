"""Launch, cancel, resume: the transitions people drive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from pytest_django.fixtures import Settings

from tests.webapp.helpers import record_steps
from webapp.core.dispatch import QueueUnavailable
from webapp.core.errors import Conflict
from webapp.experiments.models import Checkpoint, Experiment, MetricPoint, Run, RunEvent
from webapp.experiments.run_lease import lease_key
from webapp.experiments.services import (
    run_cancel,
    run_launch,
    run_mark_started,
    run_record_checkpoint,
    run_resume,
)

Join = Callable[[User, str | None], User]
Capture = Any  # pytest-django's django_capture_on_commit_callbacks


def test_launching_snapshots_the_config_and_queues_the_run(
    experiment: Experiment, alice: User, settings: Settings
) -> None:
    run = run_launch(experiment=experiment, actor=alice)
    assert run.status == "queued"
    assert run.max_steps == 20
    assert run.output_dir == str(Path(settings.RLVR_RUNS_DIR) / f"run-{run.pk}")
    assert run.config["checkpoint"]["output_dir"] == run.output_dir
    assert run.config["training"] == experiment.config["training"]


def test_a_run_is_sent_to_the_training_queue_only_after_commit(
    experiment: Experiment, alice: User, enqueued: list[int], django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        run = run_launch(experiment=experiment, actor=alice)
        assert enqueued == []
    assert enqueued == [run.pk]


def test_a_broker_that_cannot_be_reached_leaves_the_run_not_queued_with_a_hint(
    experiment: Experiment,
    alice: User,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    def broken(run_id: int) -> None:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr("webapp.experiments.services.enqueue_training", broken)
    with pytest.raises(QueueUnavailable), django_capture_on_commit_callbacks(execute=True):
        run = run_launch(experiment=experiment, actor=alice)
    run.refresh_from_db()
    assert run.status == "not_queued"
    assert "Check that Redis is reachable" in run.error_message


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_viewers_and_annotators_cannot_launch(
    experiment: Experiment, join: Join, charlie: User, role: str
) -> None:
    join(charlie, role)
    with pytest.raises(PermissionDenied):
        run_launch(experiment=experiment, actor=charlie)


def test_an_admin_can_launch(experiment: Experiment, join: Join, charlie: User) -> None:
    join(charlie, "admin")
    assert run_launch(experiment=experiment, actor=charlie).created_by == charlie


def test_cancelling_a_queued_run_cancels_it_at_once(run: Run, alice: User) -> None:
    run = run_cancel(run=run, actor=alice)
    assert run.status == "cancelled"
    assert run.finished_at is not None


def test_cancelling_a_running_run_asks_it_to_stop_at_the_next_step(
    run: Run, alice: User, lease_redis: Any
) -> None:
    run_mark_started(run_id=run.pk, worker="gpu-1")
    lease_redis.set(lease_key(run.pk), "gpu-1/token", ex=20)  # its worker is alive
    run = run_cancel(run=run, actor=alice)
    assert (run.status, run.cancel_requested) == ("running", True)


def test_cancelling_a_finished_run_is_a_conflict(run: Run, alice: User) -> None:
    Run.objects.filter(pk=run.pk).update(status="succeeded")
    with pytest.raises(Conflict, match="already finished"):
        run_cancel(run=run, actor=alice)


def test_a_viewer_cannot_cancel(run: Run, join: Join, charlie: User) -> None:
    join(charlie, "viewer")
    with pytest.raises(PermissionDenied):
        run_cancel(run=run, actor=charlie)


def test_resuming_a_failed_run_queues_it_from_its_latest_checkpoint(run: Run, alice: User) -> None:
    record_steps(run, range(1, 8))
    run_record_checkpoint(run_id=run.pk, step=3, path="/ckpt/3")
    run_record_checkpoint(run_id=run.pk, step=6, path="/ckpt/6")
    Run.objects.filter(pk=run.pk).update(status="failed", error_message="OOM")
    run = run_resume(run=run, actor=alice)
    assert (run.status, run.resume_from, run.step, run.error_message) == ("queued", "/ckpt/6", 6, "")
    assert MetricPoint.objects.filter(run=run).values_list("step", flat=True).distinct().count() == 6


def test_resuming_without_a_checkpoint_starts_over(run: Run, alice: User) -> None:
    record_steps(run, range(1, 3))
    Run.objects.filter(pk=run.pk).update(status="cancelled")
    run = run_resume(run=run, actor=alice)
    assert (run.status, run.resume_from, run.step) == ("queued", "", 0)
    assert not MetricPoint.objects.filter(run=run).exists()


def test_resuming_re_enqueues_after_commit(
    run: Run, alice: User, enqueued: list[int], django_capture_on_commit_callbacks: Capture
) -> None:
    Run.objects.filter(pk=run.pk).update(status="failed")
    with django_capture_on_commit_callbacks(execute=True):
        run_resume(run=run, actor=alice)
    assert enqueued == [run.pk]


@pytest.mark.parametrize("status", ["queued", "running", "succeeded"])
def test_only_failed_or_cancelled_runs_can_be_resumed(run: Run, alice: User, status: str) -> None:
    Run.objects.filter(pk=run.pk).update(status=status)
    with pytest.raises(Conflict, match="only failed or cancelled"):
        run_resume(run=run, actor=alice)


def test_every_transition_leaves_an_event(run: Run, alice: User) -> None:
    run_cancel(run=run, actor=alice)
    run_resume(run=run, actor=alice)
    assert list(RunEvent.objects.filter(run=run).values_list("kind", flat=True)) == [
        "launched",
        "cancelled",
        "resumed",
    ]


def test_checkpoints_are_recorded_once_per_step(run: Run) -> None:
    run_record_checkpoint(run_id=run.pk, step=5, path="/a")
    run_record_checkpoint(run_id=run.pk, step=5, path="/b")
    assert list(Checkpoint.objects.filter(run=run).values_list("path", flat=True)) == ["/b"]
