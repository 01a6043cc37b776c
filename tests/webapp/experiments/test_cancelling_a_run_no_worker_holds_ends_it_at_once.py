"""A run recorded as running whose worker is gone (no one holds its lease) has nobody to stop it at a step
boundary: cancel ends it at once, says so in its log, and the run can be resumed."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from webapp.experiments.models import Run, RunEvent
from webapp.experiments.services import run_cancel, run_mark_started, run_resume


def test_cancelling_a_running_run_that_no_worker_holds_cancels_it_at_once(
    run: Run, alice: User, lease_redis: Any
) -> None:
    run_mark_started(run_id=run.pk, worker="gpu-gone")  # and nobody holds its lease

    run = run_cancel(run=run, actor=alice)

    assert (run.status, run.cancel_requested) == ("cancelled", False)
    assert run.finished_at is not None
    event = RunEvent.objects.filter(run=run, kind="cancelled").get()
    assert "no worker holds the run" in event.message


def test_a_run_cancelled_without_a_worker_can_be_resumed(
    run: Run, alice: User, lease_redis: Any, enqueued: list[int]
) -> None:
    run_mark_started(run_id=run.pk, worker="gpu-gone")
    run_cancel(run=run, actor=alice)

    assert run_resume(run=Run.objects.get(pk=run.pk), actor=alice).status == "queued"
