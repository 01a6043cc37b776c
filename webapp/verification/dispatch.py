"""Hand a verification job to the Celery ``default`` queue: the only place this app names a worker task.

``workers.tasks_verification`` is imported inside the function, so the web process starts without the
worker package (its task imports what it runs inside its body).
"""

from __future__ import annotations

import logging

from django.conf import settings

logger = logging.getLogger(__name__)


def enqueue_verification_job(job_id: int) -> str | None:
    """Send ``workers.tasks_verification.run_verification_job(id)``; the task id, or None when RLVR_ENQUEUE
    is off (the job then stays queued)."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: verification job %s stays queued with no task sent", job_id)
        return None
    from workers.tasks_verification import run_verification_job

    return str(run_verification_job.apply_async(args=(job_id,), queue="default").id)
