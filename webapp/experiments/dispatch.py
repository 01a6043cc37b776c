"""Hand a run to the Celery ``training`` queue: the only place the experiments app sends a worker task.

The task is sent by name (webapp/core/tasks_by_name.py): the web side never imports the worker package.
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.core.tasks_by_name import RUN_TRAINING, send
from webapp.experiments.models import Run

logger = logging.getLogger(__name__)


def enqueue_training(run_id: int) -> str | None:
    """Send ``workers.tasks.run_training(run_id)``; the Celery task id, or None when RLVR_ENQUEUE is off."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: run %s stays queued with no task sent", run_id)
        return None
    task_id = send(RUN_TRAINING, run_id)
    Run.objects.filter(pk=run_id).update(celery_task_id=task_id)
    return task_id
