"""What the page reads to show a job's state: whether Cancel can still act, and its place on the queue."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.verification.job_services import verification_job_execute
from webapp.verification.models import JobKind, JobStatus, VerificationJob, VerifierVersion

Api = Callable[[User | None], APIClient]


def job(version: VerifierVersion, alice: User, status: str, **fields: object) -> VerificationJob:
    return VerificationJob.objects.create(
        kind=JobKind.AUDIT, version=version, status=status, created_by=alice, **fields
    )


def test_a_queued_job_can_be_cancelled_and_has_no_start_or_finish_time(
    api: Api, alice: User, version: VerifierVersion
) -> None:
    body = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    assert (body["can_cancel"], body["started_at"], body["finished_at"]) == (True, None, None)


def test_a_finished_job_cannot_be_cancelled(api: Api, alice: User, version: VerifierVersion) -> None:
    started = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    verification_job_execute(job_id=started["id"])
    body = api(alice).get(started["url"]).json()
    assert body["status"] == "succeeded" and body["can_cancel"] is False
    assert body["started_at"] is not None and body["finished_at"] is not None


def test_a_running_job_asked_to_stop_cannot_be_cancelled_again(
    api: Api, alice: User, version: VerifierVersion
) -> None:
    row = job(version, alice, JobStatus.RUNNING, started_at=timezone.now(), cancel_requested=True)
    assert api(alice).get(f"/api/verification-jobs/{row.pk}/").json()["can_cancel"] is False


def test_a_queued_job_counts_the_running_and_earlier_queued_jobs_ahead_of_it(
    api: Api, alice: User, version: VerifierVersion
) -> None:
    job(version, alice, JobStatus.SUCCEEDED)
    job(version, alice, JobStatus.RUNNING)
    job(version, alice, JobStatus.QUEUED)
    mine = job(version, alice, JobStatus.QUEUED)
    job(version, alice, JobStatus.QUEUED)  # queued after it: behind, not ahead
    assert api(alice).get(f"/api/verification-jobs/{mine.pk}/").json()["ahead_in_queue"] == 2
    running = VerificationJob.objects.filter(status=JobStatus.RUNNING).get()
    assert api(alice).get(f"/api/verification-jobs/{running.pk}/").json()["ahead_in_queue"] is None
