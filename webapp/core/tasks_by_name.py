"""The Celery app ``rlvr`` and the worker tasks the web side sends, by name: webapp never imports workers.

The web process only produces messages, so it needs no task code: it sends ``workers.tasks.run_training``
and the others as names, to the queue the worker's task routes name. Importing the task modules to call
``.apply_async`` would tie the two packages in an import circle (the tasks import webapp services).

This module holds the one app object: workers/celery_app.py takes it, adds the task modules and the
worker-loss flags, and runs it. Everything a producer reads (broker, queues, routes, ignore_result) is
set here, so a message sent from the web process is the one ``task.apply_async`` sent before.
tests/workers/test_webapp_task_names.py checks each name below against the registered tasks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

QUEUES = ("default", "training", "eval")


@dataclass(frozen=True)
class WorkerTask:
    """A task the worker registers under ``name`` and reads from ``queue``."""

    name: str
    queue: str


RUN_TRAINING = WorkerTask("workers.tasks.run_training", "training")
RUN_EVALUATION = WorkerTask("workers.tasks_eval.run_evaluation", "eval")
RUN_VERIFICATION_JOB = WorkerTask("workers.tasks_verification.run_verification_job", "default")
RUN_ANNOTATION_SCORING = WorkerTask("workers.tasks_annotation.run_scoring_job", "default")
TRAIN_REWARD_MODEL = WorkerTask("workers.tasks_rewards.train_reward_model", "training")
RUN_REWARD_EVALUATION = WorkerTask("workers.tasks_reward_eval.run_reward_evaluation", "eval")
SERVE_TINKER_MODEL = WorkerTask("workers.tasks_training_api.serve_model", "training")
SENT_BY_WEBAPP = (
    RUN_TRAINING, RUN_EVALUATION, RUN_VERIFICATION_JOB, RUN_ANNOTATION_SCORING, TRAIN_REWARD_MODEL,
    RUN_REWARD_EVALUATION, SERVE_TINKER_MODEL,
)  # fmt: skip

app = Celery("rlvr")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=[Queue(name) for name in QUEUES],
    task_default_queue="default",
    # Outcomes live in the database: storing task results in Redis would only add a way to fail.
    task_ignore_result=True,
)
# Each task's queue, whatever routes the settings declare (a worker listens on the queue, not the name).
app.conf.task_routes = {
    **dict(app.conf.task_routes or {}),
    **{task.name: {"queue": task.queue} for task in SENT_BY_WEBAPP},
}


def send(task: WorkerTask, *args: object) -> str:
    """Publish ``task(*args)`` to its queue; the Celery task id. Raises what kombu raises when the broker
    is down (webapp/core/dispatch.py turns that into a 503)."""
    # ignore_result: the header ``task.apply_async`` sets from the task's own flag (send_task leaves it
    # out for a task not registered in this process).
    result = app.send_task(task.name, args=args, queue=task.queue, ignore_result=True)
    return str(result.id)
