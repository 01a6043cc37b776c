"""``DjangoRunSink``: the trainer's EventSink that records a run through webapp services.

A first-use model build before step 1 reaches ``run_record_phase`` (``run.phase`` events). Each step is
handed to a background writer (workers/step_writer.py), which stores it in one transaction (metrics +
rollout rows, token arrays in the token store) with ``run_record_step``, publishes one compact
``run.step`` event after commit, then prunes what the run's retention policy lets go
(webapp/experiments/retention.py). The training loop only waits when two steps are already waiting to be
stored. A checkpoint, the end and a failure are recorded only after every step before them is stored,
and a step that failed to store fails the run at the trainer's next call. Publishing problems (Redis
down) only warn inside the publish helper, so the database keeps everything even while browsers hear
nothing; they catch up through the REST API.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.db import DatabaseError, connection

from trainer.sinks import PhaseReport, RunInfo, StepReport
from webapp.experiments import selectors, services
from webapp.experiments.retention import Pruner, prune_run
from workers.step_writer import StepWriter

logger = logging.getLogger(__name__)


class DjangoRunSink:
    """Maps trainer events to services: on_phase -> run_record_phase, on_step -> run_record_step (on the
    step writer's thread), on_checkpoint -> run_record_checkpoint, on_end -> run_finish, on_error ->
    run_fail. ``finished`` tells the task whether the run got an outcome; ``close`` stops the writer
    (on_end and on_error do it too)."""

    def __init__(self, run_id: int, writer: StepWriter | None = None) -> None:
        self.run_id = run_id
        self.finished = False
        self.writer = writer or StepWriter(f"run-{run_id}-step-writer")
        self._pruner = Pruner(run_id)

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
        """Hand the step over (copies of its containers: the loop may reuse them); waits only while two
        steps are not stored yet, and raises a failure to store an earlier step."""
        metrics, rollouts = dict(report.metrics), list(report.rollouts)

        def store() -> None:
            services.run_record_step(
                run_id=self.run_id, step=report.step, max_steps=report.max_steps, metrics=metrics, rollouts=rollouts,
            )
            self._prune(lambda: self._pruner.after_step(report.step))

        self.writer.submit(store)

    def on_checkpoint(self, step: int, path: str) -> None:
        self.writer.flush()  # the steps up to the checkpoint are stored before the checkpoint is
        services.run_record_checkpoint(run_id=self.run_id, step=step, path=path)

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        """Store what is pending and prune the whole run, then record the outcome. A step that failed to
        store raises here instead: the task then records the run as failed (workers/tasks.py)."""
        try:
            self.writer.submit(lambda: self._prune(lambda: prune_run(run_id=self.run_id)))
            self.writer.flush()
        finally:
            self.close()
        services.run_finish(run_id=self.run_id, status=status, final_metrics=final_metrics)
        self.finished = True

    def on_error(self, message: str, traceback_text: str) -> None:
        unraised = self.close()  # what is pending is stored first; the run is failing anyway
        if unraised is not None:
            message = f"{message} (storing a step had failed too: {type(unraised).__name__}: {unraised})"
        services.run_fail(run_id=self.run_id, message=message, traceback_text=traceback_text)
        self.finished = True

    def flush(self) -> None:
        """Wait until every step handed over is stored (raises a failure to store one)."""
        self.writer.flush()

    def close(self) -> BaseException | None:
        """Store what is pending and stop the writer's thread; returns a storing failure not raised yet."""
        return self.writer.close()

    def _prune(self, prune: Callable[[], int]) -> None:
        """Retention is housekeeping: a failure is logged and retried after the next step, never fatal."""
        try:
            prune()
        except Exception:
            logger.exception("run %s: pruning rollouts by its retention policy failed; retrying later", self.run_id)
            connection.close()


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
