"""``rlvr train --report-to PROJECT``: the trainer's own events sent to RLVR Studio through ``start_run``.

A run trained outside the web app (a laptop, or several hosts under torchrun or Slurm, docs/multi_node.md)
appears in the dashboard like any outside run: its metrics, rollouts, checkpoints and outcome, step by step.
``IngestSink`` takes the trainer's sink calls (trainer/sinks.py ``EventSink``) by duck typing, so this module,
like the rest of the client, imports no trainer, torch or Django; the trainer's rollout record has the wire's
field names (tests/webapp/ingest checks that they agree). A value the client refuses is logged and training
goes on: a report never stops a run.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from rlvr_client.run import IngestRun
from rlvr_client.wire import ROLLOUT_FIELDS, IngestError

logger = logging.getLogger("rlvr.ingest")


def rollout_payload(record: Any) -> dict[str, Any]:
    """One trainer ``RolloutRecord`` as the wire's rollout (its fields less ``step``)."""
    is_record = dataclasses.is_dataclass(record) and not isinstance(record, type)
    data = dataclasses.asdict(record) if is_record else dict(record)
    return {name: data[name] for name in ROLLOUT_FIELDS if name in data and data[name] is not None}


class IngestSink:
    """Sends a native run's events to the server as an outside run (``source`` "script")."""

    def __init__(self, run: IngestRun) -> None:
        self.run = run
        self.finished = False

    def on_phase(self, phase: Any) -> None:
        pass

    def on_start(self, info: Any) -> None:
        pass

    def on_step(self, report: Any) -> None:
        self._send(f"the metrics of step {report.step}", self.run.log_metrics, report.step, report.metrics)
        rollouts = [rollout_payload(r) for r in report.rollouts]
        if rollouts:
            self._send(f"the rollouts of step {report.step}", self.run.log_rollouts, report.step, rollouts)

    def on_checkpoint(self, step: int, path: str) -> None:
        self._send(f"the checkpoint of step {step}", self.run.log_checkpoint, step, path)

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self._finish(status, final_metrics, "")

    def on_error(self, message: str, traceback_text: str) -> None:
        self._finish("failed", {}, message)

    def on_warning(self, step: int, kind: str, message: str) -> None:
        logger.warning("step %s: %s: %s", step, kind, message)

    def close(self) -> None:
        """Finish the run as failed if training stopped without an outcome (an exception past the sinks)."""
        if not self.finished:  # finish() sends what is queued and closes the client
            self._finish("failed", {}, "the training process stopped without reporting an outcome")

    def _finish(self, status: str, final_metrics: dict[str, float], error_message: str) -> None:
        if self.finished:
            return
        self.finished = True
        if not self.run.finish(status, final_metrics=final_metrics, error_message=error_message):
            logger.error(
                "RLVR Studio did not confirm the run's end; it stays in the spool (send it with `rlvr sync`)"
            )

    @staticmethod
    def _send(what: str, log: Callable[..., None], *args: Any) -> None:
        try:
            log(*args)
        except IngestError as err:
            logger.error("RLVR Studio: %s not sent: %s", what, err)
