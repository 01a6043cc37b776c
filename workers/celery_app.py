"""The Celery app ``rlvr``: configured from Django settings (``CELERY_*`` in webapp/settings.py), three queues.

Queues: ``default`` (small jobs), ``training`` (GPU workers, one run at a time: start them with
``-Q training -c 1 --pool prefork``), ``eval``. Tasks are acknowledged late and re-queued when the process
executing them dies, and a worker reserves one message at a time, so a queued run never waits behind a
busy worker. The settings carry those flags; this module repeats the ones the worker-loss design relies on,
so a settings edit cannot silently break it.

Worker loss (workers/recovery.py): a run's message stays unacknowledged in Redis while it trains. A worker
restarting under the same node name re-queues the runs it owned at once; when a host never comes back,
Redis re-delivers the message to another worker after ``RLVR_TASK_VISIBILITY_TIMEOUT_S``. Either way
``run_training`` resumes from the last checkpoint. Runs stranded otherwise (a task that ended without an outcome,
a worker that never came back, a queued run whose task was lost) are found by the periodic sweep every worker
runs (workers/sweep.py; docs/recovery.md).

Started with ``celery -A workers.celery_app worker``. The web process never imports it: it sends tasks by
name through the same app object (webapp/core/tasks_by_name.py).
"""

from __future__ import annotations

from webapp.core.tasks_by_name import QUEUES, app

__all__ = ["QUEUES", "app"]

# The app object, its queues and routes are the web side's (webapp/core/tasks_by_name.py), so what the web
# process sends is what this worker reads; the worker adds the task modules and the flags below.
app.conf.update(
    include=[
        "workers.tasks",
        "workers.recovery",
        "workers.sweep",
        "workers.tasks_eval",
        "workers.tasks_verification",
        "workers.tasks_annotation",
        "workers.tasks_reward_eval",
        "workers.tasks_rewards",
        "workers.tasks_training_api",
        "workers.processes",
    ],
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    # A Redis outage must not kill a run in progress: the sink keeps writing to the database.
    worker_cancel_long_running_tasks_on_connection_loss=False,
    broker_connection_retry_on_startup=True,
)
