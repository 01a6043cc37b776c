"""Hand a run to the Celery ``training`` queue: the only place the experiments app sends a worker task.

The task is sent by name (webapp/core/tasks_by_name.py): the web side never imports the worker package.
"""

from __future__ import annotations

import logging

from django.conf import settings

from webapp.core.tasks_by_name import RUN_TRAINING, send
from webapp.experiments.models import Run
from webapp.experiments.nodes import node_start_round, run_num_nodes

logger = logging.getLogger(__name__)


def enqueue_training(run_id: int) -> str | None:
    """Send ``workers.tasks.run_training(run_id)`` (with ``training.num_nodes`` N > 1: N node tasks
    ``run_training(run_id, round, index)``); the (first) Celery task id, or None when RLVR_ENQUEUE is off."""
    if not settings.RLVR_ENQUEUE:
        logger.info("RLVR_ENQUEUE is off: run %s stays queued with no task sent", run_id)
        return None
    run = Run.objects.get(pk=run_id)
    num_nodes = run_num_nodes(run)
    if num_nodes == 1:
        task_id = send(RUN_TRAINING, run_id)
    else:  # one task per host: they meet at a rendezvous (webapp/experiments/nodes.py, workers/nodes.py)
        round_ = node_start_round(run_id=run_id)
        task_ids = [send(RUN_TRAINING, run_id, round_, index) for index in range(num_nodes)]
        task_id = task_ids[0]
    Run.objects.filter(pk=run_id).update(celery_task_id=task_id)
    return task_id
