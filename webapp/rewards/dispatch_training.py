"""Hand a reward-model training job to the Celery ``training`` queue: the only place this app sends that task.

Sent by name (webapp/core/tasks_by_name.py): the web side never imports the worker package.
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.core.tasks_by_name import TRAIN_REWARD_MODEL, send

logger = logging.getLogger(__name__)


def enqueue_reward_training(job_id: int) -> str | None:
    """Send ``workers.tasks_rewards.train_reward_model(id)``; the task id, or None when RLVR_ENQUEUE is off (the
    job then stays queued)."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: reward training job %s stays queued with no task sent", job_id)
        return None
    return send(TRAIN_REWARD_MODEL, job_id)
