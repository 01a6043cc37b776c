"""Hand an annotation scoring job to the Celery ``default`` queue: the only place this app sends a worker task.

The task is sent by name (webapp/core/tasks_by_name.py): the web side never imports the worker package.
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.core.tasks_by_name import RUN_ANNOTATION_SCORING, send

logger = logging.getLogger(__name__)


def enqueue_scoring_job(job_id: int) -> str | None:
    """Send ``workers.tasks_annotation.run_scoring_job(id)``; the task id, or None when RLVR_ENQUEUE is off
    (the job then stays queued)."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: annotation scoring job %s stays queued with no task sent", job_id)
        return None
    return send(RUN_ANNOTATION_SCORING, job_id)
