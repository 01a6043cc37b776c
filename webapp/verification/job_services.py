"""Writes of verification jobs: start an audit or a rescore (web process) and run one (a worker's task).

The audit (10-20 s for math) and a rescore of a whole run (minutes) outlive a web request, so the API
stores a ``VerificationJob`` and sends ``workers.tasks_verification.run_verification_job`` to the
``default`` queue after commit (webapp/verification/dispatch.py); the page polls the job. With
RLVR_ENQUEUE off nothing is sent and the job stays queued.

Running a job is safe to repeat: tasks are acknowledged late, so a worker that dies mid-job gets its
message re-delivered. A finished job is then skipped; one left ``running`` starts again from the first
chunk (a rescore only reads rollouts, and its totals are rebuilt from scratch).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from trainer.errors import RLVRError
from webapp.core.dispatch import send_after_commit
from webapp.core.errors import ApplicationError, Conflict, InvalidInput
from webapp.experiments.models import Run
from webapp.teams.models import Role
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser
from webapp.verification import bench, selectors
from webapp.verification.dispatch import enqueue_verification_job
from webapp.verification.models import JobKind, JobStatus, VerificationJob, VerifierVersion

logger = logging.getLogger(__name__)

# Who may start an audit or a rescore: whoever may use the test bench, i.e. read the project. Both only
# score with a saved version and store the outcome; they change nothing a run or an experiment holds.
RUN_BENCH = READ
CANCEL_OTHERS_JOBS = Role.ADMIN  # anyone cancels their own job; admins and owners anyone's
RESCORE_CAP = 200_000  # rollouts per rescore job: a few minutes of exact checks, ~30 MB of ids in the worker
RESCORE_CHUNK = 500  # rollouts scored between two saves of the ``done`` counter
ERROR_CHARS = 20_000


def verification_audit_start(*, version: VerifierVersion, actor: AnyUser) -> VerificationJob:
    """Queue the metamorphic audit of ``version`` (or return the one already queued or running)."""
    require_role(project=version.definition.project, user=actor, minimum=RUN_BENCH)
    return _start(version=version, actor=actor, kind=JobKind.AUDIT, run=None, limit=None,
                  total=bench.audit_size())  # fmt: skip


def verification_rescore_start(
    *, version: VerifierVersion, run: Run, actor: AnyUser, limit: int | None = None
) -> VerificationJob:
    """Queue a rescore of ``run``'s newest ``limit`` rollouts (all when None) with ``version``."""
    require_role(project=version.definition.project, user=actor, minimum=RUN_BENCH)
    if run.experiment.project_id != version.definition.project_id:
        message = "That run belongs to another project: pick a run of this verifier's project."
        raise InvalidInput(message, {"run": [message]})
    if limit is not None and not 1 <= limit <= RESCORE_CAP:
        message = (
            f"A rescore scores between 1 and {RESCORE_CAP} rollouts (newest steps first): set limit to "
            f"{RESCORE_CAP} or less, or split the run into several rescores."
        )
        raise InvalidInput(message, {"limit": [message]})
    stored = selectors.run_rollout_count(run=run)
    if stored == 0:
        raise ApplicationError(f"Run #{run.pk} has no stored rollouts yet: rescore it after its first step.")
    if limit is None and stored > RESCORE_CAP:
        message = (
            f"Run #{run.pk} holds {stored} rollouts, more than one rescore scores ({RESCORE_CAP}): "
            f"set limit to {RESCORE_CAP} or less to score the newest ones."
        )
        raise InvalidInput(message, {"limit": [message]})
    return _start(version=version, actor=actor, kind=JobKind.RESCORE, run=run, limit=limit,
                  total=min(stored, limit or stored))  # fmt: skip


def verification_job_execute(*, job_id: int) -> str:
    """Run the job to its end (the worker's task calls this); returns 'succeeded', 'failed' or 'skipped'
    (no such job, or it had already finished: a duplicate delivery)."""
    job = _mark_started(job_id=job_id)
    if job is None:
        return "skipped"
    try:
        result = _audit(job) if job.kind == JobKind.AUDIT else _rescore(job)
    except _Cancelled as stop:
        VerificationJob.objects.filter(pk=job.pk).update(
            status=JobStatus.CANCELLED, result=stop.partial, finished_at=timezone.now()
        )
        return "cancelled"
    except Exception as err:
        verification_job_fail(job_id=job.pk, message=_error_text(job, err))
        return "failed"
    with transaction.atomic():
        row = VerificationJob.objects.select_for_update().get(pk=job.pk)
        row.status = JobStatus.SUCCEEDED
        row.result = result
        row.done = row.total
        row.finished_at = timezone.now()
        row.save(update_fields=["status", "result", "done", "finished_at"])
    return "succeeded"


def verification_job_cancel(*, job: VerificationJob, actor: AnyUser) -> VerificationJob:
    """Cancel a job: a queued one at once, a running one at its next chunk boundary (a rescore keeps what it
    scored so far as a partial result). Whoever started it, or an admin, may cancel it."""
    project = job.version.definition.project
    if job.created_by_id != getattr(actor, "pk", None):
        require_role(project=project, user=actor, minimum=CANCEL_OTHERS_JOBS)
    with transaction.atomic():
        row = VerificationJob.objects.select_for_update().get(pk=job.pk)
        if row.finished:
            raise Conflict(
                f"This {row.kind} job has already finished ({row.status}): there is nothing to cancel."
            )
        if row.status == JobStatus.QUEUED:  # its message may still arrive: the worker then skips it
            row.status, row.finished_at = JobStatus.CANCELLED, timezone.now()
        row.cancel_requested = True
        row.save(update_fields=["status", "finished_at", "cancel_requested"])
    return row


class _Cancelled(Exception):
    """A running job saw its cancel request; ``partial`` is what it had scored (stored as the result)."""

    def __init__(self, partial: dict[str, Any]) -> None:
        super().__init__("cancelled")
        self.partial = partial


def _cancel_requested(job_id: int) -> bool:
    return VerificationJob.objects.filter(pk=job_id, cancel_requested=True).exists()


def verification_job_fail(*, job_id: int, message: str) -> None:
    """Store the error; the page shows it where the result would be."""
    VerificationJob.objects.filter(pk=job_id).update(
        status=JobStatus.FAILED, error=message[:ERROR_CHARS], finished_at=timezone.now()
    )


def _start(
    *, version: VerifierVersion, actor: AnyUser, kind: JobKind, run: Run | None, limit: int | None, total: int
) -> VerificationJob:
    """A new queued job, sent to a worker after commit; a second click on the same button while the first
    job is still queued or running gets that job back instead of a duplicate. A version naming a model or
    endpoint reward source (saved before definitions refused them) is refused here too."""
    bench.refuse_reward_source(version.verifier)
    with transaction.atomic():
        same = VerificationJob.objects.select_for_update().filter(
            version=version,
            kind=kind,
            run=run,
            limit=limit,
            status__in=(JobStatus.QUEUED, JobStatus.RUNNING),
            cancel_requested=False,
        )
        existing = same.order_by("-id").first()
        if existing is not None:
            return existing
        job = VerificationJob.objects.create(
            version=version, kind=kind, run=run, limit=limit, total=total,
            created_by=actor if actor.is_authenticated else None,
        )  # fmt: skip
        _enqueue_after_commit(job.pk)
    return job


def _enqueue_after_commit(job_id: int) -> None:
    def failed(err: Exception) -> None:
        verification_job_fail(
            job_id=job_id,
            message=f"Could not send the job to a worker ({err}). Check that Redis is reachable at REDIS_URL "
            "and that a worker listens on the 'default' queue, then start it again.",
        )

    send_after_commit(lambda: enqueue_verification_job(job_id), failed, f"verification job {job_id}")


def _mark_started(*, job_id: int) -> VerificationJob | None:
    """The job, now running from its start; None when it is gone or already finished."""
    with transaction.atomic():
        job = (
            VerificationJob.objects.select_for_update(of=("self",))
            .select_related("version", "run")
            .filter(pk=job_id)
            .first()
        )
        if job is None or job.finished:
            return None
        job.status = JobStatus.RUNNING
        job.started_at = job.started_at or timezone.now()
        job.attempts += 1
        job.done = 0
        job.save(update_fields=["status", "started_at", "attempts", "done"])
    return job


def _audit(job: VerificationJob) -> dict[str, Any]:
    """Score the variants chunk by chunk; ``done`` is saved after each chunk for the page's progress bar."""

    def progress(done: int) -> None:
        VerificationJob.objects.filter(pk=job.pk).update(done=done)
        if _cancel_requested(job.pk):
            raise _Cancelled({"version": job.version_id, "cancelled": True, "scored": done})

    report = bench.audit(job.version, on_progress=progress)
    VerificationJob.objects.filter(pk=job.pk).update(total=report.total)
    return {"version": job.version_id, **report.to_json()}


def _rescore(job: VerificationJob) -> dict[str, Any]:
    """Score the rollouts chunk by chunk; ``done`` is saved after each chunk for the page's progress bar."""
    run = job.run
    assert run is not None  # a rescore job always has its run (deleting the run deletes the job)
    ids = selectors.rescore_rollout_ids(run=run, limit=job.limit)
    VerificationJob.objects.filter(pk=job.pk).update(total=len(ids))
    verifier = bench.built(job.version.verifier, job.version.params)
    tally = bench.RescoreTally()
    for start in range(0, len(ids), RESCORE_CHUNK):
        chunk = ids[start : start + RESCORE_CHUNK]
        bench.rescore_chunk(verifier, selectors.rollouts_for_rescore(ids=chunk), tally)
        VerificationJob.objects.filter(pk=job.pk).update(done=start + len(chunk))
        if start + len(chunk) < len(ids) and _cancel_requested(job.pk):
            partial = tally.to_json(run_id=run.pk, total=selectors.run_rollout_count(run=run))
            raise _Cancelled({**partial, "cancelled": True})
    return tally.to_json(run_id=run.pk, total=selectors.run_rollout_count(run=run))


def _error_text(job: VerificationJob, err: Exception) -> str:
    """An error meant for the user (a bad verifier, a trainer config error) as it is; anything else with
    its type, logged with the traceback."""
    if isinstance(err, ApplicationError):
        return err.message
    if isinstance(err, RLVRError):
        return str(err)
    logger.exception("verification job %s failed", job.pk)
    return f"{type(err).__name__}: {err}"
