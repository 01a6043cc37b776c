"""A run's running totals, so the dashboard can chart any metric against wall-clock time or tokens instead
of steps (W&B's "Relative Time", TRL's ``num_tokens``): two metrics added to every step's report.

- ``perf/elapsed_s``: seconds of training since the run started, measured when the step is reported. Model
  loading before the first step is not counted; a resumed run continues from the value its checkpoint saved
  (the time between the interruption and the resume is not counted either, and steps redone after the
  checkpoint are timed again).
- ``perf/tokens_total``: prompt + completion tokens of every step's rollouts so far (``perf/step_tokens``
  summed), each rollout counted once however many optimizer passes it had; it continues across a resume too.

Both are added in the loop after a data-parallel step's metrics are combined (trainer/distributed/context.py
sums ``perf/step_tokens`` over ranks), so they are the run's totals, not one rank's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ELAPSED_KEY = "perf/elapsed_s"
TOKENS_KEY = "perf/tokens_total"
STEP_TOKENS_KEY = "perf/step_tokens"  # reported by trainer/step/reporting.py for each step


@dataclass
class RunProgress:
    """Elapsed training time and tokens so far; ``state()`` is what a checkpoint keeps of it."""

    elapsed_before_s: float = 0.0  # earlier attempts of a resumed run, from its checkpoint
    tokens_total: float = 0.0
    clock: Callable[[], float] = time.monotonic
    _started: float | None = field(default=None, repr=False)

    @classmethod
    def resumed(
        cls, state: dict[str, Any] | None, clock: Callable[[], float] = time.monotonic
    ) -> RunProgress:
        """From a checkpoint's ``TrainerState.progress``; None (a checkpoint written before it existed)
        starts both totals at 0."""
        state = state or {}
        return cls(
            elapsed_before_s=float(state.get("elapsed_s", 0.0)),
            tokens_total=float(state.get("tokens_total", 0.0)),
            clock=clock,
        )

    def start(self) -> None:
        """The first step begins now (called once the model is built)."""
        self._started = self.clock()

    def elapsed_s(self) -> float:
        running = 0.0 if self._started is None else self.clock() - self._started
        return self.elapsed_before_s + running

    def record(self, metrics: dict[str, float]) -> None:
        """Add the step's tokens to the total and write both totals into the step's ``metrics``."""
        step_tokens = metrics.get(STEP_TOKENS_KEY, 0.0)
        if step_tokens == step_tokens:  # not NaN
            self.tokens_total += step_tokens
        metrics[ELAPSED_KEY] = self.elapsed_s()
        metrics[TOKENS_KEY] = self.tokens_total

    def state(self) -> dict[str, float]:
        return {"elapsed_s": self.elapsed_s(), "tokens_total": self.tokens_total}
