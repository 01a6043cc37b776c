"""The ``default`` queue's verification task: a verifier version's metamorphic audit, or a rescore of a
run's stored rollouts (webapp/verification/job_services.py does the work and stores progress and result).

Like ``run_evaluation`` it takes an id and imports webapp inside its body (the web process imports this
module to enqueue). Late acknowledgement re-delivers a job whose worker died; the service skips a
finished one and restarts one left running.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from workers.celery_app import app


@app.task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    name="workers.tasks_verification.run_verification_job",
)
def run_verification_job(self: Task[Any, Any], job_id: int) -> str:
    """Run job ``job_id`` to its end; 'succeeded', 'failed', or 'skipped' (gone, or already finished)."""
    from webapp.verification.job_services import verification_job_execute

    return verification_job_execute(job_id=job_id)
