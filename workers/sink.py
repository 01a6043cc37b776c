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

A database outage (a restart, a failover) is ridden through: every write here is retried on connection
errors for ``RLVR_DB_RETRY_S`` (workers/db_retry.py). Meanwhile the steps wait in the writer in order and
the trainer waits behind them (backpressure); a retried step replaces itself, so none is stored twice.
Past the window the run stops as failed and resumable.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.db import DatabaseError, connection

from trainer.sinks import PhaseReport, RunInfo, StepReport
from webapp.experiments import selectors, services
from webapp.experiments.retention import Pruner, prune_run
from workers.db_retry import DatabaseUnavailable, with_db_retry
from workers.step_writer import StepWriter

logger = logging.getLogger(__name__)


class DjangoRunSink:
    """Maps trainer events to services: on_phase -> run_record_phase, on_step -> run_record_step (on the
    step writer's thread), on_warning -> run_log_event (level warning, same thread), on_checkpoint -> run_record_checkpoint, on_end -> run_finish, on_error ->
    run_fail. ``finished`` tells the task whether the run got an outcome; ``close`` stops the writer
    (on_end and on_error do it too)."""

    def __init__(self, run_id: int, writer: StepWriter | None = None) -> None:
        self.run_id = run_id
        self.finished = False
        self.writer = writer or StepWriter(f"run-{run_id}-step-writer")
        self._pruner = Pruner(run_id)
        self._database_lost: DatabaseUnavailable | None = None

    def on_phase(self, phase: PhaseReport) -> None:
        """The trainer throttles these (about two a second while a built-in model is built). They only
        inform: a database hiccup costs a warning, never the build (the next report tries again)."""
        try:
            services.run_record_phase(
                run_id=self.run_id,
                name=phase.name,
                label=phase.label,
                subject=phase.subject,
                done=phase.done,
                total=phase.total,
                elapsed_s=phase.elapsed_s,
                eta_s=phase.eta_s,
            )
        except DatabaseError as err:
            logger.warning("run %s: could not record the %s phase: %s", self.run_id, phase.name, err)
            connection.close()  # reconnect on the next report

    def on_start(self, info: RunInfo) -> None:
        first = info.start_step + 1
        message = (
            f"training steps {first}..{info.max_steps} of {info.name} "
            f"({info.num_parameters / 1e6:.2f}M parameters on {info.device})"
        )
        self._write(
            lambda: services.run_log_event(
                run_id=self.run_id, level="info", kind="start", step=info.start_step, message=message
            ),
            "recording the start",
        )

    def on_step(self, report: StepReport) -> None:
        """Hand the step over (copies of its containers: the loop may reuse them); waits only while two
        steps are not stored yet, and raises a failure to store an earlier step."""
        metrics, rollouts = dict(report.metrics), list(report.rollouts)

        def store() -> None:
            self._write(
                lambda: services.run_record_step(
                    run_id=self.run_id,
                    step=report.step,
                    max_steps=report.max_steps,
                    metrics=metrics,
                    rollouts=rollouts,
                ),
                f"storing step {report.step}",
            )
            # One line per step in the worker's log (`docker compose logs worker-cpu`), once it is stored.
            logger.info("run %s: step %s/%s stored", self.run_id, report.step, report.max_steps)
            self._prune(lambda: self._pruner.after_step(report.step))

        self.writer.submit(store)

    def on_warning(self, step: int, kind: str, message: str) -> None:
        """A warning event on the run's page (e.g. ``reward_hacking``, trainer/rewards/hacking.py), recorded after
        the steps handed over before it, so the page has the step's points when it hears the warning. Secret
        values are scrubbed from it like a failure's."""
        from trainer.verifiers.secrets import scrub

        message = scrub(message)
        self.writer.submit(
            lambda: self._write(
                lambda: services.run_log_event(
                    run_id=self.run_id, level="warning", kind=kind, step=step, message=message[:2000]
                ),
                f"recording a {kind} warning",
            )
        )

    def on_checkpoint(self, step: int, path: str) -> None:
        self.writer.flush()  # the steps up to the checkpoint are stored before the checkpoint is
        self._write(
            lambda: services.run_record_checkpoint(run_id=self.run_id, step=step, path=path),
            f"recording checkpoint {step}",
        )

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        """Store what is pending and prune the whole run, then record the outcome. A step that failed to
        store raises here instead: the task then records the run as failed (workers/tasks.py)."""
        try:
            self.writer.submit(lambda: self._prune(lambda: prune_run(run_id=self.run_id)))
            self.writer.flush()
        finally:
            self.close()
        self._write(
            lambda: services.run_finish(run_id=self.run_id, status=status, final_metrics=final_metrics),
            "recording the outcome",
        )
        self.finished = True

    def on_error(self, message: str, traceback_text: str) -> None:
        """Record the trainer's failure; a secret value provided to this process (a judge's API key) is
        scrubbed from the message and the traceback first (``trainer.verifiers.secrets.scrub``)."""
        from trainer.verifiers.secrets import scrub

        message, traceback_text = scrub(message), scrub(traceback_text)
        unraised = self.close()  # what is pending is stored first; the run is failing anyway
        if self._database_lost is not None:  # the cause, said plainly; its traceback helps nobody
            message, traceback_text = database_lost_message(self._database_lost), ""
        elif unraised is not None:
            message = scrub(
                f"{message} (storing a step had failed too: {type(unraised).__name__}: {unraised})"
            )
        self._write(
            lambda: services.run_fail(run_id=self.run_id, message=message, traceback_text=traceback_text),
            "recording the failure",
        )
        self.finished = True

    def flush(self) -> None:
        """Wait until every step handed over is stored (raises a failure to store one)."""
        self.writer.flush()

    def close(self) -> BaseException | None:
        """Store what is pending and stop the writer's thread; returns a storing failure not raised yet."""
        return self.writer.close()

    def _write(self, write: Callable[[], object], what: str) -> None:
        """``write()`` retried through a database outage; the first DatabaseUnavailable is kept for the
        failure message."""
        try:
            with_db_retry(write, f"{what} of run {self.run_id}")
        except DatabaseUnavailable as err:
            self._database_lost = self._database_lost or err
            raise

    def _prune(self, prune: Callable[[], int]) -> None:
        """Retention is housekeeping: a failure is logged and retried after the next step, never fatal."""
        try:
            prune()
        except Exception:
            logger.exception(
                "run %s: pruning rollouts by its retention policy failed; retrying later", self.run_id
            )
            connection.close()


def database_lost_message(err: DatabaseUnavailable) -> str:
    """What a run stopped by a database outage longer than the retry window says."""
    text = str(err)
    return f"{text[:1].upper()}{text[1:]}. The run stopped; resume it to continue from its last checkpoint."


class StopPoller:
    """``should_stop`` for ``train``: asks the database whether a cancel was requested, at most once per
    ``interval_s`` (the loop calls it every step, and tiny steps take milliseconds). A database hiccup
    reads as "keep going": a missed cancel is seen at the next poll."""

    def __init__(
        self, run_id: int, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
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
