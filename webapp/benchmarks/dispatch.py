"""Hand an evaluation to the Celery ``eval`` queue: the only place the benchmarks app sends a worker task.

The task is sent by name (webapp/core/tasks_by_name.py): the web side never imports the worker package
(nor torch, which the task loads inside its body).
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.benchmarks.models import EvalRun
from webapp.core.tasks_by_name import RUN_EVALUATION, send

logger = logging.getLogger(__name__)


def enqueue_evaluation(eval_run_id: int) -> str | None:
    """Send ``workers.tasks_eval.run_evaluation(id)``; the task id, or None when RLVR_ENQUEUE is off."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: evaluation %s stays queued with no task sent", eval_run_id)
        return None
    task_id = send(RUN_EVALUATION, eval_run_id)
    EvalRun.objects.filter(pk=eval_run_id).update(celery_task_id=task_id)
    return task_id
