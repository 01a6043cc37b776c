"""``StepWriter``: one background thread that stores a run's steps, so the training step does not wait on
the database and the token store.

Writing one step of 256 rollouts x 512 tokens synchronously cost the trainer ~170 ms per step (packing,
then PostgreSQL); handing it to this thread costs the trainer the hand-over only. Three rules keep that
safe:

- at most ``max_pending`` steps (2) are handed over and not yet stored: the next ``submit`` waits, so a
  slow store slows training down (backpressure) instead of filling memory with steps;
- ``flush`` waits until every step handed over is stored: the sink calls it before recording a
  checkpoint, the end or a failure, so a Checkpoint row never exists for a step whose rollouts are not
  stored (a resume after a crash truncates to the checkpoint and loses nothing);
- an exception in a job is raised again in the caller's thread at its next ``submit`` or ``flush``
  (once), and the thread runs nothing after it: later steps would otherwise be stored past a hole.

The thread closes its own Django database connection when it stops (``close``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from django.db import connections

logger = logging.getLogger(__name__)

MAX_PENDING_STEPS = 2
Job = Callable[[], None]


def _STOP() -> None:  # the sentinel that ends the thread, never called
    raise AssertionError("the stop sentinel is not a job")


class StepWriterStopped(RuntimeError):
    """A step was handed over after an earlier step failed to store (that failure was raised already)."""


class StepWriter:
    def __init__(self, name: str, max_pending: int = MAX_PENDING_STEPS) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self.name = name
        self.max_pending = max_pending
        self.busy_s = 0.0  # seconds the thread spent running jobs (benchmarks/rollout_storage.py reads it)
        self.jobs_done = 0
        self._jobs: queue.Queue[Job] = queue.Queue()
        self._slots = threading.BoundedSemaphore(max_pending)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._error_raised = False
        self._closed = False

    def submit(self, job: Job) -> None:
        """Hand ``job`` to the thread; waits while ``max_pending`` jobs are not done yet. Raises a failed
        earlier job's exception (the first time), or StepWriterStopped after it."""
        self._raise_error()
        if self._error is not None:
            raise StepWriterStopped(
                f"{self.name}: not storing more steps after an earlier one failed"
            ) from self._error
        if self._closed:
            raise StepWriterStopped(f"{self.name} is closed")
        self._slots.acquire()  # backpressure: blocks while max_pending steps are in flight
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
            self._thread.start()
        self._jobs.put(job)

    def flush(self) -> None:
        """Wait until every job handed over has run; then raise a failed job's exception (the first time)."""
        self._jobs.join()
        self._raise_error()

    def close(self) -> BaseException | None:
        """Run what is pending, stop the thread (it closes its database connection) and return a failure
        not raised to the caller yet, marking it raised. Safe to call more than once."""
        if not self._closed:
            self._closed = True
            if self._thread is not None:
                self._jobs.put(_STOP)
                self._thread.join()
        if self._error is not None and not self._error_raised:
            self._error_raised = True
            return self._error
        return None

    @property
    def pending(self) -> int:
        """Jobs handed over and not done yet (at most ``max_pending``)."""
        return self._jobs.unfinished_tasks

    def _raise_error(self) -> None:
        if self._error is not None and not self._error_raised:
            self._error_raised = True
            raise self._error

    def _work(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                try:
                    if job is _STOP:
                        return
                    if self._error is None:  # after a failure the remaining steps are dropped, not stored
                        self._run(job)
                finally:
                    if job is not _STOP:
                        self._slots.release()
                    self._jobs.task_done()
        finally:
            connections.close_all()  # this thread's own connections only (they are per thread)

    def _run(self, job: Job) -> None:
        started = time.perf_counter()
        try:
            job()
        except BaseException as err:  # handed to the caller's thread, never lost
            logger.error("%s: storing a step failed: %s", self.name, err, exc_info=True)
            self._error = err
        finally:
            self.busy_s += time.perf_counter() - started
            self.jobs_done += 1
