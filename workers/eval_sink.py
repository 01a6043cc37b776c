"""``DjangoEvalSink``: the evaluation engine's EvalSink that stores per-problem results through webapp
services, and ``EvalStopPoller``, its ``should_stop``.

Finished problems are buffered and written in batches (one transaction, bulk inserts, one
``eval.progress`` event per batch): at most ``flush_every`` problems or ``flush_s`` seconds wait in the
buffer, and ``on_end`` (or the task, on an error) flushes the rest. A problem lost from the buffer by a
killed worker is simply evaluated again on resume, since only stored problems are passed back as ``done``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, connection

from webapp.benchmarks import results, selectors, services

logger = logging.getLogger(__name__)


class DjangoEvalSink:
    flush_every = 16  # problems
    flush_s = 0.5  # seconds

    def __init__(self, eval_run_id: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.eval_run_id = eval_run_id
        self.clock = clock
        self.buffer: list[Any] = []
        self.result: Any = None
        self._flushed_at = clock()

    def on_start(self, total_problems: int, done: int) -> None:
        services.eval_set_total(eval_run_id=self.eval_run_id, total=total_problems, done=done)

    def on_problem(self, problem: Any) -> None:
        self.buffer.append(problem)
        if len(self.buffer) >= self.flush_every or self.clock() - self._flushed_at >= self.flush_s:
            self.flush()

    def on_end(self, result: Any) -> None:
        self.flush()
        self.result = result

    def flush(self) -> None:
        if self.buffer:
            results.eval_record_problems(eval_run_id=self.eval_run_id, problems=self.buffer)
            self.buffer = []
        self._flushed_at = self.clock()


class EvalStopPoller:
    """``should_stop``: asks the database whether a cancel was requested, at most once per ``interval_s``
    (the engine asks before each batch). A database hiccup reads as "keep going"; ``stopped`` tells the
    task the evaluation was cut short."""

    interval_s = 1.0

    def __init__(self, eval_run_id: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.eval_run_id = eval_run_id
        self.clock = clock
        self._checked_at: float | None = None
        self.stopped = False

    def __call__(self) -> bool:
        now = self.clock()
        if self.stopped or (self._checked_at is not None and now - self._checked_at < self.interval_s):
            return self.stopped
        self._checked_at = now
        try:
            self.stopped = selectors.eval_should_stop(eval_run_id=self.eval_run_id)
        except DatabaseError as err:
            logger.warning("evaluation %s: could not check for a cancel request: %s", self.eval_run_id, err)
            connection.close()
        return self.stopped
