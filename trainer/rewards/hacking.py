"""Watching a run for reward hacking: a learned reward that keeps rising while the task's verifier falls.

A policy optimised against a learned proxy (a Bradley-Terry reward model, an LLM judge) first improves the true
objective too, then, past some distance from the initial policy, exploits the proxy's errors: the proxy reward still
climbs while the gold reward turns down. Gao, Schulman and Hilton ("Scaling Laws for Reward Model Overoptimization",
2022) measured this divergence against a gold reward model; Skalse et al. ("Defining and Characterizing Reward
Hacking") give the general definition. In RLVR the gold reward is at hand wherever the task has a programmatic
verifier: listed with weight 0 it is computed on the same rollouts but not trained on (a *monitor*), so the
divergence can be watched live.

How this detector decides (one rule, chosen for robustness to the noise of small batches): over the last ``window``
steps that report both series it fits a least-squares line to each against the step, and reads each trend's change
across the window (slope x (last step - first step)). The flag fires at the first step where the learned reward's
change is at least ``+min_rise`` while the monitor's is at most ``-min_fall``; it fires once and then stays raised.
A least-squares slope rather than first-half/second-half means, because it uses every point with its position and
does not depend on where the window is cut. Gao et al. fit the gold-vs-proxy relation offline over whole runs; this
is an online early warning on a window, and it can neither tell hacking from a verifier that drifts for other
reasons nor see hacking that the monitor does not measure.

Pure Python (no torch): the state is a few numbers per step, saved in the checkpoint (``state`` / ``from_state``) or
rebuilt from a run's stored metrics (``rebuild``), so a resumed run flags the same step an uninterrupted one would.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainer.config import ExperimentConfig

HACKING_METRIC = "watch/hacking"  # 0 until the flag fires, 1 from that step on
WARNING_KIND = "reward_hacking"  # the kind of the warning event a run's sink receives


@dataclass(frozen=True)
class HackingFlag:
    """What the watch saw when it fired: the step and the fitted changes of both series over the window."""

    step: int
    learned_metric: str  # reward/<learned>_mean
    verifier_metric: str  # reward/<monitor>_mean
    first_step: int  # the window's first step
    rise: float  # the learned reward's fitted change across the window (>= min_rise)
    fall: float  # the monitor's fitted change across the window (<= -min_fall)

    @property
    def message(self) -> str:
        """ "Reward hacking suspected at step 57: reward/rm_mean rose +0.21 over steps 38-57 while the verifier's
        accuracy (reward/chain_arithmetic_mean) fell -0.12" """
        return (
            f"Reward hacking suspected at step {self.step}: {self.learned_metric} rose {self.rise:+.2f} over steps "
            f"{self.first_step}-{self.step} while the verifier's accuracy ({self.verifier_metric}) fell {self.fall:+.2f}"
        )


def fitted_change(steps: list[int], values: list[float]) -> float:
    """The least-squares line's change from the first step to the last: slope x (steps[-1] - steps[0]).

    >>> round(fitted_change([1, 2, 3], [0.0, 0.5, 1.0]), 6)
    1.0
    """
    n = len(steps)
    if n < 2:
        return 0.0
    mean_x, mean_y = sum(steps) / n, sum(values) / n
    sxx = sum((x - mean_x) ** 2 for x in steps)
    if sxx == 0:
        return 0.0
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(steps, values, strict=True)) / sxx
    return slope * (steps[-1] - steps[0])


class HackingDetector:
    """Feeds on one step's metrics at a time (``observe``) and fires once; see the module docstring for the rule."""

    def __init__(
        self, learned_metric: str, verifier_metric: str, window: int, min_rise: float, min_fall: float
    ) -> None:
        if window < 3:
            raise ValueError(f"window must be at least 3 steps, got {window}")
        self.learned_metric = learned_metric
        self.verifier_metric = verifier_metric
        self.window = window
        self.min_rise = min_rise
        self.min_fall = min_fall
        self.points: deque[tuple[int, float, float]] = deque(maxlen=window)  # (step, learned, monitor)
        self.flag: HackingFlag | None = None

    def observe(self, step: int, metrics: Mapping[str, float]) -> HackingFlag | None:
        """Take one step's metrics; returns the flag at the step it fires, else None. A step without a finite value
        of both series (an evaluation-only step 0, a batch the learned source could not score) is skipped."""
        learned, monitor = metrics.get(self.learned_metric), metrics.get(self.verifier_metric)
        if learned is None or monitor is None or not (math.isfinite(learned) and math.isfinite(monitor)):
            return None
        if self.points and step <= self.points[-1][0]:  # a step seen already (a replayed history)
            return None
        self.points.append((step, float(learned), float(monitor)))
        if self.flag is not None or len(self.points) < self.window:
            return None
        steps = [p[0] for p in self.points]
        rise = fitted_change(steps, [p[1] for p in self.points])
        fall = fitted_change(steps, [p[2] for p in self.points])
        if rise >= self.min_rise and fall <= -self.min_fall:
            self.flag = HackingFlag(step, self.learned_metric, self.verifier_metric, steps[0], rise, fall)
            return self.flag
        return None

    def metrics(self) -> dict[str, float]:
        """``watch/hacking``: 0 until the flag fired, 1 from then on (so it stays visible on every later step)."""
        return {HACKING_METRIC: 0.0 if self.flag is None else 1.0}

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps: the window's points and the flag."""
        return {
            "points": [list(p) for p in self.points],
            "flag": None if self.flag is None else asdict(self.flag),
        }

    def load_state(self, state: Mapping[str, Any] | None) -> None:
        """Continue from ``state()`` (None: a checkpoint written before the watch existed: start empty)."""
        if not state:
            return
        self.points.clear()
        for step, learned, monitor in state.get("points", [])[-self.window :]:
            self.points.append((int(step), float(learned), float(monitor)))
        flag = state.get("flag")
        self.flag = HackingFlag(**flag) if flag else None

    def rebuild(self, history: Iterable[tuple[int, Mapping[str, float]]]) -> None:
        """Replay a run's stored metrics ``(step, metrics)`` in step order: the state an uninterrupted run had."""
        for step, metrics in history:
            self.observe(step, metrics)


def detector_for(config: ExperimentConfig) -> HackingDetector | None:
    """The watch ``config.reward_watch`` asks for (trainer/config/reward_watch.py), or None when there is none."""
    keys = config.watched_rewards
    if keys is None:
        return None
    watch = config.reward_watch
    return HackingDetector(
        keys.learned_metric, keys.verifier_metric, watch.window, watch.min_rise, watch.min_fall
    )
