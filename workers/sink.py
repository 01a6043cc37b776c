"""``DjangoRunSink``: the trainer's EventSink that records a run through webapp services.

A first-use model build before step 1 reaches ``run_record_phase`` (``run.phase`` events). Each step is
written in one transaction (metrics + rollout records) by ``run_record_step``, which then
publishes one compact ``run.step`` event after commit. Publishing problems (Redis down) only warn inside
the publish helper, so the database keeps everything even while browsers hear nothing; they catch up
through the REST API.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.db import DatabaseError, connection

from trainer.sinks import PhaseReport, RunInfo, StepReport
from webapp.experiments import selectors, services

logger = logging.getLogger(__name__)


class DjangoRunSink:
    """Maps trainer events to services: on_phase -> run_record_phase, on_step -> run_record_step,
    on_checkpoint -> run_record_checkpoint, on_end -> run_finish, on_error -> run_fail. ``finished`` tells
    the task whether the run got an outcome."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.finished = False

    def on_phase(self, phase: PhaseReport) -> None:
        """The trainer throttles these (about two a second while a built-in model is built). They only
        inform: a database hiccup costs a warning, never the build (the next report tries again)."""
        try:
            services.run_record_phase(
                run_id=self.run_id, name=phase.name, label=phase.label, subject=phase.subject, done=phase.done,
                total=phase.total, elapsed_s=phase.elapsed_s, eta_s=phase.eta_s,
            )
        except DatabaseError as err:
            logger.warning("run %s: could not record the %s phase: %s", self.run_id, phase.name, err)
            connection.close()  # reconnect on the next report

    def on_start(self, info: RunInfo) -> None:
        first = info.start_step + 1
        services.run_log_event(
            run_id=self.run_id, level="info", kind="start", step=info.start_step,
            message=f"training steps {first}..{info.max_steps} of {info.name} "
            f"({info.num_parameters / 1e6:.2f}M parameters on {info.device})",
        )

    def on_step(self, report: StepReport) -> None:
        services.run_record_step(
            run_id=self.run_id, step=report.step, max_steps=report.max_steps,
            metrics=report.metrics, rollouts=report.rollouts,
        )

    def on_checkpoint(self, step: int, path: str) -> None:
        services.run_record_checkpoint(run_id=self.run_id, step=step, path=path)

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        services.run_finish(run_id=self.run_id, status=status, final_metrics=final_metrics)
        self.finished = True

    def on_error(self, message: str, traceback_text: str) -> None:
        services.run_fail(run_id=self.run_id, message=message, traceback_text=traceback_text)
        self.finished = True


class StopPoller:
    """``should_stop`` for ``train``: asks the database whether a cancel was requested, at most once per
    ``interval_s`` (the loop calls it every step, and tiny steps take milliseconds). A database hiccup
    reads as "keep going": a missed cancel is seen at the next poll."""

    def __init__(self, run_id: int, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.run_id = run_id
        self.interval_s = interval_s
        self.clock = clock
        self._checked_at: float | None = None
        self._stop = False

    def __call__(self) -> bool:
        now = self.clock()
        if self._stop or (self._checked_at is not None and now - self._checked_at < self.interval_s):
            return self._stop
        self._checked_at = now
        try:
            self._stop = bool(selectors.run_should_stop(run_id=self.run_id))
        except DatabaseError as err:
            logger.warning("run %s: could not check for a cancel request: %s", self.run_id, err)
            connection.close()  # reconnect on the next poll
        return self._stop
