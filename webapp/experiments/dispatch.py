"""Hand a run to the Celery ``training`` queue. The only place the web side names a worker task.

``workers.tasks`` is imported inside the function: importing it at module level would make every web
process import the worker package at start-up, and the web side must stay importable without it.
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.experiments.models import Run

logger = logging.getLogger(__name__)


def enqueue_training(run_id: int) -> str | None:
    """Send ``workers.tasks.run_training(run_id)``; the Celery task id, or None when RLVR_ENQUEUE is off."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: run %s stays queued with no task sent", run_id)
        return None
    from workers.tasks import run_training

    result = run_training.apply_async(args=(run_id,), queue="training")
    Run.objects.filter(pk=run_id).update(celery_task_id=result.id)
    return str(result.id)
