"""Measured quantities: one arm's step metrics and held-out evaluations -> one number per seed.

Each measure gets the arm and the baseline arm of the same seed (a target may be defined from the
baseline). Training-reward measures are biased for methods that choose prompts or rollouts (they see
easier or more informative groups), so accuracy claims are judged on held-out evaluations (greedy and sampled).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EARLY_STEPS = 30  # ThinkPrior reports silent groups and wasted rollouts "through step 30" (001:L23)
LAST_STEPS = 10


@dataclass
class ArmResult:
    """What one training run of one arm produced (JSON round-trips through ``to_json``)."""

    metrics: list[dict[str, float]]  # one dict per step, the StepReport metrics
    evals: list[dict[str, float]]  # {"step", "cumulative_rollouts", "accuracy"} at each checkpoint, step 0 first
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"metrics": self.metrics, "evals": self.evals, "wall_s": self.wall_s, "extra": self.extra}

    @staticmethod
    def from_json(data: dict[str, Any]) -> ArmResult:
        return ArmResult(data["metrics"], data["evals"], data["wall_s"], data.get("extra", {}))

    def series(self, key: str, default: float = 0.0) -> list[float]:
        return [float(m.get(key, default)) for m in self.metrics]

    def generated(self) -> list[float]:
        """Rollouts generated per step; arms without budget metrics generated prompts x group size."""
        return [float(m.get("budget/rollouts_generated", m.get("_completions", 0.0))) for m in self.metrics]


@dataclass(frozen=True)
class Measure:
    name: str
    description: str
    fn: Callable[[ArmResult, ArmResult], float]
    fmt: str = "{:.3f}"


MEASURES: dict[str, Measure] = {}


def _measure(name: str, description: str, fmt: str = "{:.3f}") -> Callable[[Callable[[ArmResult, ArmResult], float]], Callable[[ArmResult, ArmResult], float]]:
    def register(fn: Callable[[ArmResult, ArmResult], float]) -> Callable[[ArmResult, ArmResult], float]:
        if name in MEASURES:
            raise ValueError(f"measure {name!r} is already registered")
        MEASURES[name] = Measure(name, description, fn, fmt)
        return fn

    return register


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


@_measure("final_accuracy", "held-out greedy accuracy (500 fresh additions) of the final model")
def final_accuracy(arm: ArmResult, baseline: ArmResult) -> float:
    return float(arm.evals[-1]["accuracy"])


@_measure("final_sampled_accuracy", "held-out accuracy of the final model at temperature 1 (4 samples of 200 fresh additions)")
def final_sampled_accuracy(arm: ArmResult, baseline: ArmResult) -> float:
    return float(arm.evals[-1]["sampled_accuracy"])


@_measure("final_reward", f"mean training reward over the last {LAST_STEPS} steps (biased for prompt/rollout selection)")
def final_reward(arm: ArmResult, baseline: ArmResult) -> float:
    return _mean(arm.series("rollout/reward_mean")[-LAST_STEPS:])


@_measure("zero_std_frac_early", f"fraction of zero-variance (silent) groups in the update batch, first {EARLY_STEPS} steps")
def zero_std_frac_early(arm: ArmResult, baseline: ArmResult) -> float:
    return _mean(arm.series("rollout/zero_std_frac")[:EARLY_STEPS])


@_measure("silent_group_frac_early", f"fraction of generated groups that were silent (incl. dropped/abandoned), first {EARLY_STEPS} steps")
def silent_group_frac_early(arm: ArmResult, baseline: ArmResult) -> float:
    return _mean(arm.series("budget/silent_group_frac")[:EARLY_STEPS])


@_measure("wasted_rollouts_early", f"rollouts generated in silent groups through step {EARLY_STEPS}", "{:.0f}")
def wasted_rollouts_early(arm: ArmResult, baseline: ArmResult) -> float:
    return sum(arm.series("budget/silent_rollouts")[:EARLY_STEPS])


@_measure("rollouts_generated", "rollouts generated over the whole run", "{:.0f}")
def rollouts_generated(arm: ArmResult, baseline: ArmResult) -> float:
    return sum(arm.generated())


@_measure("rollouts_to_target", "rollouts generated until the held-out sampled accuracy first reaches half of "
          "the baseline's gain (start + (final - start) / 2); censored at the run's total", "{:.0f}")
def rollouts_to_target(arm: ArmResult, baseline: ArmResult) -> float:
    start, end = baseline.evals[0]["sampled_accuracy"], baseline.evals[-1]["sampled_accuracy"]
    target = start + (end - start) / 2 if end > start else math.inf
    for point in arm.evals[1:]:
        if point["sampled_accuracy"] >= target:
            return float(point["cumulative_rollouts"])
    return float(sum(arm.generated()))  # not reached: censored at everything the arm generated


@_measure("wall_s", "wall-clock seconds of the training run (noisy on a shared machine)", "{:.1f}")
def wall_s(arm: ArmResult, baseline: ArmResult) -> float:
    return arm.wall_s
