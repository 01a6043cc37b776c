"""Running a verification job as the worker does (``verification_job_execute``): progress saved per chunk,
the kept changed rows, failures stored, duplicate and dead-worker deliveries, and what is sent to Celery."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from webapp.core.dispatch import QueueUnavailable
from webapp.core.errors import ApplicationError
from webapp.experiments.models import Run
from webapp.verification import bench, job_services
from webapp.verification.job_services import (
    verification_audit_start,
    verification_job_execute,
    verification_rescore_start,
)
from webapp.verification.models import JobStatus, VerificationJob, VerifierVersion


def test_a_rescore_saves_its_progress_after_each_chunk(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_services, "RESCORE_CHUNK", 3)
    job = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice)
    seen: list[tuple[int, int]] = []
    real_chunk = bench.rescore_chunk

    def spy(verifier: Any, rollouts: Any, tally: bench.RescoreTally) -> None:
        row = VerificationJob.objects.get(pk=job.pk)
        seen.append((row.done, len(rollouts)))
        real_chunk(verifier, rollouts, tally)

    monkeypatch.setattr(bench, "rescore_chunk", spy)
    assert verification_job_execute(job_id=job.pk) == "succeeded"
    assert seen == [(0, 3), (3, 1)]
    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.result["scored"]) == (JobStatus.SUCCEEDED, 4, 4, 4)


def test_a_rescore_of_the_newest_rollouts_scores_only_those(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run
) -> None:
    job = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice, limit=2)
    verification_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert (job.result["scored"], job.result["total"], job.result["changed"]) == (2, 4, 1)


def test_only_the_first_changed_rows_are_kept_but_all_are_counted(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "CHANGED_ROWS_KEPT", 1)
    job = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice)
    verification_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert (job.result["changed"], len(job.result["rows"]), job.result["rows_truncated"]) == (2, 1, True)


def test_a_crash_is_stored_with_its_type_as_a_failed_job(
    alice: User, version: VerifierVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(version: VerifierVersion, on_progress: Any = None) -> Any:
        raise RuntimeError("pool died")

    monkeypatch.setattr(bench, "audit", crash)
    job = verification_audit_start(version=version, actor=alice)
    assert verification_job_execute(job_id=job.pk) == "failed"
    job.refresh_from_db()
    assert (job.status, job.error, job.result) == (JobStatus.FAILED, "RuntimeError: pool died", {})
    assert job.finished_at is not None


def test_an_error_meant_for_the_user_is_stored_as_it_is(
    alice: User, version: VerifierVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(version: VerifierVersion, on_progress: Any = None) -> Any:
        raise ApplicationError("Unknown verifier 'mathh': pick one of exact, math.")

    monkeypatch.setattr(bench, "audit", refuse)
    job = verification_audit_start(version=version, actor=alice)
    verification_job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.error == "Unknown verifier 'mathh': pick one of exact, math."


def test_a_redelivered_finished_job_is_skipped(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run
) -> None:
    job = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice)
    assert verification_job_execute(job_id=job.pk) == "succeeded"
    assert verification_job_execute(job_id=job.pk) == "skipped"
    assert VerificationJob.objects.get(pk=job.pk).attempts == 1


def test_a_job_left_running_by_a_dead_worker_starts_again(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run
) -> None:
    job = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice)
    VerificationJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, done=3, attempts=1)
    assert verification_job_execute(job_id=job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.attempts, job.done, job.result["scored"], job.result["changed"]) == (2, 4, 4, 2)


def test_a_deleted_job_is_skipped(db: None) -> None:
    assert verification_job_execute(job_id=987654) == "skipped"


def test_with_enqueue_off_a_started_job_stays_queued(
    alice: User, version: VerifierVersion, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job = verification_audit_start(version=version, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_a_job_that_cannot_reach_the_broker_fails_with_how_to_fix_it(
    alice: User,
    version: VerifierVersion,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    def unreachable(job_id: int) -> str:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6399")

    monkeypatch.setattr(job_services, "enqueue_verification_job", unreachable)
    with pytest.raises(QueueUnavailable), django_capture_on_commit_callbacks(execute=True):
        job = verification_audit_start(version=version, actor=alice)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "REDIS_URL" in job.error and "'default' queue" in job.error


def test_an_audit_job_reports_progress_until_every_variant_is_scored(
    alice: User, version: VerifierVersion
) -> None:
    job = verification_audit_start(version=version, actor=alice)
    assert verification_job_execute(job_id=job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.total == job.result["total"] and job.done == job.total > 64  # more than one chunk
