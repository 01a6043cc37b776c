"""A warning on a training run when a built-in model is built beside it on the same machine.

A build (a first use in an evaluation, ``rlvr init-model`` in a terminal) is a second torch process on the
cores the run trains on: its steps slow down, a lot on a small machine, and the run page would otherwise
not say why. ``SharedCoresWatch`` is a sink beside the run's ``DjangoRunSink``: at most every
``interval_s`` it looks for builds in progress (trainer/models/tiny_model.py ``builds_in_progress``, a
marker file per build) and logs one ``shared_cores`` warning event per build it sees. A failure to look or
to record is logged and never reaches the run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from django.db import DatabaseError, connection

from trainer.sinks import NullSink, StepReport
from webapp.experiments import services

logger = logging.getLogger(__name__)

Builds = Callable[[], list[tuple[str, int]]]


def _builds_here() -> list[tuple[str, int]]:
    from trainer.models.tiny_model import builds_in_progress

    return builds_in_progress(exclude_pid=os.getpid())


def shared_cores_message(model: str, pid: int, threads: int | None) -> str:
    share = (
        f"this worker's {threads} torch thread{'s' if threads != 1 else ''}"
        if threads
        else "this worker's torch threads"
    )
    return (
        f"The built-in model {model} is being built beside this run on the same machine (process {pid}): the build "
        f"and the training steps share {share} and the cores under them, so steps run slower until it finishes. "
        "Build models before training (`rlvr init-model`), or let a run build them itself."
    )


class SharedCoresWatch(NullSink):
    """Listens to a run's steps; warns the run once per model build it finds running beside it."""

    def __init__(
        self,
        run_id: int,
        interval_s: float = 5.0,
        builds: Builds = _builds_here,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run_id = run_id
        self.interval_s = interval_s
        self.builds = builds
        self.clock = clock
        self._looked_at: float | None = None
        self._warned: set[tuple[str, int]] = set()

    def on_step(self, report: StepReport) -> None:
        now = self.clock()
        if self._looked_at is not None and now - self._looked_at < self.interval_s:
            return
        self._looked_at = now
        try:
            found = [b for b in self.builds() if b not in self._warned]
        except OSError as err:
            logger.warning("run %s: could not look for model builds beside it: %s", self.run_id, err)
            return
        for model, pid in found:
            self._warned.add((model, pid))
            self._warn(model, pid, report.step)

    def _warn(self, model: str, pid: int, step: int) -> None:
        from trainer.models.threads import threads_from_env

        try:
            threads = threads_from_env()
        except ValueError:
            threads = None
        try:
            services.run_log_event(
                run_id=self.run_id,
                level="warning",
                kind="shared_cores",
                step=step,
                message=shared_cores_message(model, pid, threads),
            )
        except DatabaseError as err:
            logger.warning("run %s: could not record a model build beside it: %s", self.run_id, err)
            connection.close()  # reconnect on the next write
