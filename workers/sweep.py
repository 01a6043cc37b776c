"""The periodic sweep: finds stranded runs and brings them back, within a bounded time, with no beat process.

Recovery at worker start (workers/recovery.py) covers a worker that dies and comes back under its name.
This covers the rest: a run whose task ended without recording an outcome (the database was down past the
retry window when it tried, workers/db_retry.py) or whose worker never came back, and a queued run whose
task the broker lost. Nothing else would ever look at them: they would read ``running`` / ``queued`` for good.

Why a thread in every worker and not Celery beat: the deploy has no beat process (docker-compose.yml,
webapp/stack.py start workers only), and a sweep task on a queue would wait behind a training run (the
training workers run one task at a time). So each worker's main process runs a ``Sweeper`` thread that
every ``RLVR_SWEEP_S`` (30 s) tries to take a Redis lock (``SET NX EX``) held for one interval: one sweep
per interval in the whole deployment, whichever worker takes it. What a sweep does:

- a native ``running`` run whose lease (workers/lease.py) nobody holds, nor any node lease of a run over
  several hosts, watched for two heartbeats (a
  Redis restart loses keys until the next beat rewrites them): ``run_recover_stranded`` re-queues it from
  its last checkpoint while attempts remain (``RLVR_MAX_ATTEMPTS``) and sends it, or marks it failed and
  resumable; a cancel it had been asked for is honoured. A run event says why. A lease that is present
  but no longer refreshed expires within its TTL (20 s) and is seen by the next sweep;
- a ``queued`` run whose task is neither waiting in the training queue nor held unacknowledged by a
  worker, in two sweeps in a row (its task is sent after the launch commits): sent again, with an event.
  A duplicate delivery is harmless (``run_training`` drops it).

So a stranded run is found within about TTL + 2 heartbeats + one interval (about a minute by default).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterable
from typing import Any

from celery.signals import worker_ready, worker_shutdown

from webapp.core.tasks_by_name import RUN_TRAINING
from webapp.experiments.run_lease import node_leases_held
from workers.lease import HEARTBEAT_S, TTL_S, holder_alive, lease_key

logger = logging.getLogger(__name__)


def sweep_lock_key() -> str:
    """One sweep per interval per database (deployments, or test sessions, may share a Redis)."""
    from django.conf import settings

    return f"rlvr:stranded-run-sweep:{settings.DATABASES['default']['NAME']}"


def running_native_runs() -> list[int]:
    from webapp.experiments.models import Run, RunSource, RunStatus

    return list(
        Run.objects.filter(status=RunStatus.RUNNING, source=RunSource.NATIVE).values_list("pk", flat=True)
    )


def recover_stranded_runs(
    client: Any, *, max_attempts: int, heartbeat_s: float = HEARTBEAT_S, ttl_s: float = TTL_S
) -> dict[int, str]:
    """Recover the running runs no live worker holds; {run id: "requeued" | "failed" | "cancelled"}."""
    from webapp.experiments.dispatch import enqueue_training
    from webapp.experiments.services import run_recover_stranded

    done: dict[int, str] = {}
    for run_id in running_native_runs():
        if (
            client.get(lease_key(run_id)) is not None
            or node_leases_held(run_id, client)  # a node of a run over several hosts (workers/nodes.py)
            or holder_alive(run_id, client, heartbeat_s, ttl_s)
        ):
            continue  # held, or expiring: a later sweep sees it gone
        reason = (
            f"No worker held the run for {2 * heartbeat_s:g} s: its task ended without recording an outcome "
            "(the database was unreachable when it tried), or its worker is gone."
        )
        outcome = run_recover_stranded(run_id=run_id, reason=reason, max_attempts=max_attempts)
        if outcome == "requeued":
            enqueue_training(run_id)
        if outcome:
            logger.warning("run %s was stranded: %s", run_id, outcome)
            done[run_id] = outcome
    return done


def tasks_in_broker(client: Any, queue: str = RUN_TRAINING.queue) -> set[str]:
    """Task ids and ``run_training`` run ids (as ``run:<id>``) of the messages waiting in ``queue`` or held
    unacknowledged by a worker (kombu's Redis transport: a list per queue, the ``unacked`` hash)."""
    raw: list[Any] = list(client.lrange(queue, 0, -1))
    raw += [json.loads(value)[0] for value in client.hvals("unacked")]
    found: set[str] = set()
    for message in raw:
        try:
            headers = (json.loads(message) if isinstance(message, bytes | str) else message).get(
                "headers"
            ) or {}
        except (ValueError, AttributeError):
            continue
        found.add(str(headers.get("id", "")))
        if headers.get("task") == RUN_TRAINING.name:  # (run_id,) or a node task's (run_id, round, index)
            found.add(f"run:{str(headers.get('argsrepr', '')).strip('()[] ').split(',')[0].strip()}")
    return found


def queued_runs_without_task(client: Any) -> list[int]:
    from webapp.experiments.models import Run, RunSource, RunStatus

    queued = Run.objects.filter(status=RunStatus.QUEUED, source=RunSource.NATIVE).values_list(
        "pk", "celery_task_id"
    )
    present = tasks_in_broker(client)
    return [
        pk for pk, task_id in queued if f"run:{pk}" not in present and (not task_id or task_id not in present)
    ]


def resend_lost_tasks(run_ids: Iterable[int]) -> list[int]:
    """Send the runs' tasks again (still queued: a worker may have taken one meanwhile), with an event."""
    from webapp.experiments.dispatch import enqueue_training
    from webapp.experiments.models import Run, RunStatus
    from webapp.experiments.services import run_log_event

    sent = []
    for run_id in run_ids:
        if not Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).exists():
            continue
        enqueue_training(run_id)
        message = "Its task was no longer in the queue (the broker lost it); sent again."
        run_log_event(run_id=run_id, level="warning", kind="requeued", message=message)
        sent.append(run_id)
    return sent


class Sweeper:
    """The sweep every ``interval_s`` in a daemon thread, by whichever worker takes the lock."""

    def __init__(self, interval_s: float, max_attempts: int, name: str = "") -> None:
        self.interval_s, self.max_attempts, self.name = interval_s, max_attempts, name
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stranded-run-sweep", daemon=True)
        self._missing_before: set[int] = set()  # queued runs seen without a task by this process's last sweep

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def sweep_once(self) -> bool:
        """One sweep if this worker takes the lock; whether it did."""
        from workers.lease import redis_client

        client = redis_client()
        if not client.set(
            sweep_lock_key(), f"{self.name}/{uuid.uuid4().hex}", nx=True, ex=max(1, int(self.interval_s))
        ):
            return False
        recover_stranded_runs(client, max_attempts=self.max_attempts)
        missing = set(queued_runs_without_task(client))
        resend_lost_tasks(sorted(missing & self._missing_before))
        self._missing_before = missing
        return True

    def _loop(self) -> None:
        from django.db import connections

        while not self._stop.wait(self.interval_s):
            try:
                self.sweep_once()
            except Exception as err:  # the database or Redis down: the next interval tries again
                logger.warning(
                    "the stranded-run sweep failed (%s); trying again in %g s", err, self.interval_s
                )
            finally:
                connections.close_all()  # this thread's; the pool forks children from this process


_sweeper: Sweeper | None = None


@worker_ready.connect
def _start_sweeper(sender: Any = None, **kwargs: Any) -> None:
    """In the worker's main process once its pool runs (the children are forked without this thread)."""
    global _sweeper
    from django.conf import settings

    hostname = str(getattr(sender, "hostname", "") or "")
    _sweeper = Sweeper(float(settings.RLVR_SWEEP_S), int(settings.RLVR_MAX_ATTEMPTS), hostname).start()


@worker_shutdown.connect
def _stop_sweeper(**kwargs: Any) -> None:
    if _sweeper is not None:
        _sweeper.stop()
