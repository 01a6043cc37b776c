"""Worker loss: how a run interrupted by a dead worker comes back, and how duplicates are dropped.

Four pieces, each simple on its own:

1. Celery: ``acks_late`` + ``reject_on_worker_lost`` + prefetch 1. The run's message stays
   unacknowledged in Redis while it trains; if the pool process dies it is re-queued at once, if the
   whole worker dies Redis re-delivers it after the visibility timeout (``workers.celery_app``).
2. A lease (``workers.lease``): the worker training a run holds ``rlvr:run-lease:<id>`` and refreshes it
   every few seconds. A second delivery of a run whose lease is alive is dropped; a dead worker's lease
   stops being refreshed and expires.
3. ``requeue_runs_of_dead_incarnation``: a worker that starts under a node name still recorded on
   ``running`` runs is normally the restart of a worker that died. Unless the run's lease shows a live
   holder (another worker with the same name), it re-queues those runs through
   ``run_requeue_after_worker_loss`` and sends them again before it consumes anything, so a restarted
   worker picks its run up within seconds, not after the visibility timeout.
4. ``run_training`` drops a delivery of a finished run or of a run whose lease is alive, and resumes from the run's last recorded complete checkpoint (``plan_start``), after
   deleting what was stored past it, so no step is stored twice or lost.

Evaluations (workers/tasks_eval.py) come back the same way, without the lease:
``requeue_evaluations_of_dead_incarnation`` re-queues those recorded as running on the restarted worker's
name, and the evaluation resumes after the problems it had stored.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery.signals import celeryd_after_setup

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StartPlan:
    """How ``run_training`` starts: fresh (``resume_from`` None) or from a checkpoint directory."""

    resume_from: str | None
    step: int  # steps kept: the checkpoint's step (0 when fresh); stored rows after it are deleted
    truncate: bool  # an earlier attempt (or a resume) may have stored rows past ``step``
    note: str  # for the run's event log, after "Attempt 2 on <worker>: "


def complete_checkpoint_step(path: str) -> int | None:
    """The step of a complete checkpoint directory (its COMPLETE marker holds it), else None: a
    checkpoint pruned by ``save_total_limit``, half-written, or on a volume this worker cannot see."""
    from trainer.models.checkpoint import COMPLETE_MARKER

    marker = Path(path) / COMPLETE_MARKER
    try:
        return int(marker.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def plan_start(
    *, resume_from: str, earlier_attempt: bool, checkpoints: Sequence[tuple[int, str]], stored_step: int
) -> StartPlan:
    """Where a run starts. The database is the truth, not the disk: a checkpoint counts once it is
    recorded, and only at or below the last stored step, so the steps kept are exactly the steps stored.

    - ``resume_from`` (set by a resume or a worker-loss requeue) when that checkpoint is complete;
    - after an interrupted attempt, the newest recorded complete checkpoint (``checkpoints`` are
      (step, path) rows of the run);
    - otherwise, or when no checkpoint is usable, from step 0.
    """
    if resume_from:
        step = complete_checkpoint_step(resume_from)
        if step is not None:
            return StartPlan(
                resume_from, step, True, f"resuming from the checkpoint at step {step} ({resume_from})."
            )
    if not (resume_from or earlier_attempt):
        return StartPlan(None, 0, False, "starting from step 0.")
    for step, path in sorted(checkpoints, reverse=True):
        if step <= stored_step and complete_checkpoint_step(path) == step:
            return StartPlan(
                path,
                step,
                True,
                f"resuming from the checkpoint at step {step} ({path}) after an interrupted attempt.",
            )
    missing = f" ({resume_from} is gone)" if resume_from else ""
    return StartPlan(None, 0, True, f"starting again from step 0: no usable checkpoint{missing}.")


def runs_running_on(nodename: str) -> list[int]:
    """Ids of the runs recorded as ``running`` on worker ``nodename``."""
    from webapp.experiments.models import Run, RunSource, RunStatus

    return list(
        Run.objects.filter(status=RunStatus.RUNNING, worker=nodename, source=RunSource.NATIVE).values_list(
            "pk", flat=True
        )
    )  # an outside run's "worker" is the host it trains on, never a Celery node of ours


def requeue_runs_of_dead_incarnation(nodename: str) -> list[int]:
    """Re-queue, and send again, the runs still recorded as ``running`` on ``nodename`` whose lease shows
    no live holder; returns their ids. Waits up to the lease TTL for a lease the dead worker left behind."""
    from webapp.experiments.dispatch import enqueue_training
    from webapp.experiments.run_lease import node_leases_held
    from webapp.experiments.services import run_requeue_after_worker_loss
    from workers.lease import holder_alive, redis_client

    requeued = []
    client = redis_client()
    for run_id in runs_running_on(nodename):
        if node_leases_held(run_id, client) or holder_alive(run_id, client):
            logger.warning(
                "run %s is being trained by another live worker named %s; leaving it", run_id, nodename
            )
            continue
        logger.warning("run %s was running on %s when it died; re-queueing it", run_id, nodename)
        run_requeue_after_worker_loss(run_id=run_id)
        # The dead worker's message comes back only after the visibility timeout; send a fresh one now.
        # Whichever arrives second finds the run finished, or its lease held, and is dropped.
        enqueue_training(run_id)
        requeued.append(run_id)
    return requeued


def requeue_evaluations_of_dead_incarnation(nodename: str) -> list[int]:
    """Re-queue, and send again, the evaluations still recorded as ``running`` on ``nodename``; they resume
    after the problems already stored. Evaluations hold no lease, so unlike runs a second live worker
    started under the same name (a misconfiguration) would see its evaluation sent twice; problems stored
    twice are kept once (webapp/benchmarks/results.py)."""
    from webapp.benchmarks.dispatch import enqueue_evaluation
    from webapp.benchmarks.models import EvalRun, EvalStatus
    from webapp.benchmarks.services import eval_requeue_after_worker_loss

    requeued = []
    for eval_run_id in EvalRun.objects.filter(status=EvalStatus.RUNNING, worker=nodename).values_list(
        "pk", flat=True
    ):
        logger.warning("evaluation %s was running on %s when it died; re-queueing it", eval_run_id, nodename)
        if eval_requeue_after_worker_loss(eval_run_id=eval_run_id):
            enqueue_evaluation(eval_run_id)
            requeued.append(eval_run_id)
    return requeued


@celeryd_after_setup.connect
def _on_worker_setup(sender: str, instance: Any = None, **kwargs: Any) -> None:
    """Runs in the worker's main process after setup and before it consumes any message."""
    import django

    django.setup()
    try:
        for requeue in (requeue_runs_of_dead_incarnation, requeue_evaluations_of_dead_incarnation):
            try:
                requeue(sender)
            except Exception:  # never keep a worker from starting; the visibility timeout is the backstop
                logger.exception("could not re-queue the work of a previous incarnation of %s", sender)
    finally:
        from django.db import connections

        connections.close_all()  # the pool forks after this: children must not share the socket
