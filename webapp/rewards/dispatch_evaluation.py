"""Hand a reward-source evaluation to the Celery ``eval`` queue: the only place this module's jobs are sent.

The task is sent by name through the web side's app (webapp/core/tasks_by_name.py): the web process never
imports the worker package.
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.core.tasks_by_name import RUN_REWARD_EVALUATION, send

logger = logging.getLogger(__name__)


def enqueue_reward_evaluation(job_id: int) -> str | None:
    """Send ``workers.tasks_reward_eval.run_reward_evaluation(id)``; the task id, or None when RLVR_ENQUEUE is
    off (the job then stays queued)."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: reward evaluation %s stays queued with no task sent", job_id)
        return None
    return send(RUN_REWARD_EVALUATION, job_id)
