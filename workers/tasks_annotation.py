"""The ``default`` queue's annotation task: score an annotation task's items with a saved verifier version
or a rubric's rule criteria (webapp/annotation/scoring_jobs.py does the work and stores the scores).

Like ``run_verification_job`` it takes an id and imports webapp inside its body (the web process imports
this module to enqueue). Late acknowledgement re-delivers a job whose worker died; the service skips a
finished one and scores one left running again from its first item.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from workers.celery_app import app


@app.task(
    bind=True, acks_late=True, reject_on_worker_lost=True, name="workers.tasks_annotation.run_scoring_job"
)
def run_scoring_job(self: Task[Any, Any], job_id: int) -> str:
    """Run scoring job ``job_id`` to its end; 'succeeded', 'failed', or 'skipped' (gone, or already finished)."""
    from webapp.annotation.scoring_jobs import scoring_job_execute

    return scoring_job_execute(job_id=job_id)
