"""Hand an evaluation to the Celery ``eval`` queue: the only place the benchmarks app names a worker task.

``workers.tasks_eval`` is imported inside the function, so the web process starts without the worker
package (and never loads torch: the task imports the trainer inside its body).
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.benchmarks.models import EvalRun

logger = logging.getLogger(__name__)


def enqueue_evaluation(eval_run_id: int) -> str | None:
    """Send ``workers.tasks_eval.run_evaluation(id)``; the task id, or None when RLVR_ENQUEUE is off."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: evaluation %s stays queued with no task sent", eval_run_id)
        return None
    from workers.tasks_eval import run_evaluation

    result = run_evaluation.apply_async(args=(eval_run_id,), queue="eval")
    EvalRun.objects.filter(pk=eval_run_id).update(celery_task_id=result.id)
    return str(result.id)
