"""Cancelling a verification job: queued ones at once, running ones at the next chunk with a partial result,
and who may cancel whose job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from rest_framework.test import APIClient

from webapp.core.errors import Conflict
from webapp.experiments.models import Run
from webapp.verification import bench, job_services
from webapp.verification.job_services import (
    verification_audit_start,
    verification_job_cancel,
    verification_job_execute,
    verification_rescore_start,
)
from webapp.verification.models import JobStatus, VerificationJob, VerifierVersion


def test_a_queued_job_is_cancelled_at_once_and_its_late_message_is_skipped(
    alice: User, version: VerifierVersion
) -> None:
    job = verification_job_cancel(job=verification_audit_start(version=version, actor=alice), actor=alice)
    assert job.status == JobStatus.CANCELLED and job.finished_at is not None
    assert verification_job_execute(job_id=job.pk) == "skipped"
    again = verification_audit_start(version=version, actor=alice)  # a new click starts a new job
    assert again.pk != job.pk and again.status == JobStatus.QUEUED


def test_a_running_rescore_stops_at_the_next_chunk_and_keeps_what_it_scored(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_services, "RESCORE_CHUNK", 2)
    job = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice)
    real_chunk = bench.rescore_chunk

    def cancel_while_scoring(verifier: Any, rollouts: Any, tally: bench.RescoreTally) -> None:
        real_chunk(verifier, rollouts, tally)
        if not VerificationJob.objects.get(pk=job.pk).cancel_requested:  # someone presses Cancel meanwhile
            verification_job_cancel(job=VerificationJob.objects.get(pk=job.pk), actor=alice)

    monkeypatch.setattr(bench, "rescore_chunk", cancel_while_scoring)
    assert verification_job_execute(job_id=job.pk) == "cancelled"
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == (JobStatus.CANCELLED, 2, 4)
    assert job.result["cancelled"] is True and job.result["scored"] == 2
    with pytest.raises(Conflict, match="already finished"):
        verification_job_cancel(job=job, actor=alice)


def test_a_running_audit_stops_at_the_next_chunk(
    alice: User, version: VerifierVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = verification_audit_start(version=version, actor=alice)
    real_audit = bench.audit

    def cancel_after_first_chunk(v: VerifierVersion, on_progress: Callable[[int], None]) -> Any:
        def progress(done: int) -> None:
            if done == 64:
                VerificationJob.objects.filter(pk=job.pk).update(cancel_requested=True)
            on_progress(done)

        return real_audit(v, on_progress=progress)

    monkeypatch.setattr(bench, "audit", cancel_after_first_chunk)
    assert verification_job_execute(job_id=job.pk) == "cancelled"
    job.refresh_from_db()
    assert (job.status, job.done, job.result["scored"]) == (JobStatus.CANCELLED, 64, 64)


def test_only_the_starter_or_an_admin_cancels(
    alice: User,
    bob: User,
    version: VerifierVersion,
    join: Callable[[User, str | None], User],
    api: Callable[[User | None], APIClient],
) -> None:
    join(bob, "viewer")
    job = verification_audit_start(version=version, actor=alice)
    with pytest.raises(PermissionDenied):
        verification_job_cancel(job=job, actor=bob)
    mine = verification_audit_start(version=version, actor=bob)
    assert mine.pk == job.pk  # the same audit is already queued: bob gets alice's job back
    answer = api(alice).post(f"/api/verification-jobs/{job.pk}/cancel/")
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    assert answer.json()["cancel_requested"] is True
    assert api(alice).post(f"/api/verification-jobs/{job.pk}/cancel/").status_code == 409
