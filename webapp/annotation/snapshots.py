"""What an annotation item holds, built from a rollout (or, later, a benchmark sample): Django-free values.

A rollout's rubric scores live under ``rubric/<criterion>`` (trainer/rubrics/scoring.py): ``details`` holds
the scorer's record with ``score``, the raw score on the criterion's own scale (None when it could not be
scored), and ``rewards`` the score normalised to [0, 1] (0 when unscorable). The detail's score is what
people are compared with; only a rollout without that detail falls back to the reward, mapped back onto
the scale (``min + reward * (max - min)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MACHINE_SCORERS = ("rule", "judge")


@dataclass(frozen=True)
class ItemSnapshot:
    prompt: str
    completion: str
    reference_answer: str | None = None
    reward: float | None = None
    correct: bool | None = None
    source_kind: str = "run"
    source_run_id: int | None = None
    source_step: int | None = None
    source_rollout_id: int | None = None
    source: dict[str, Any] = field(default_factory=dict)
    machine_scores: dict[str, dict[str, Any]] = field(default_factory=dict)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) or math.isinf(value) else float(value)


def machine_scores(
    *, rewards: Mapping[str, Any], details: Mapping[str, Any], criteria: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """criterion name -> {scorer, score, detail} for each rule/judge criterion the rollout has a score for."""
    found: dict[str, dict[str, Any]] = {}
    for criterion in criteria:
        if criterion["scorer"] not in MACHINE_SCORERS:
            continue
        key = f"rubric/{criterion['name']}"
        detail = details.get(key)
        if isinstance(detail, Mapping) and "score" in detail:
            score = _number(detail["score"])  # None: the scorer could not score it; not a 0
        else:
            normalised = _number(rewards.get(key))
            low, high = criterion["min_value"], criterion["max_value"]
            score = None if normalised is None else low + normalised * (high - low)
        if score is not None or detail is not None:
            found[criterion["name"]] = {"scorer": criterion["scorer"], "score": score, "detail": detail}
    return found
