"""The part of the ``reasoning_gym`` verifier that runs inside timeout-pool workers.

Importing reasoning-gym registers its ~100 procedural datasets (over a second), so it happens here, when a
worker loads ``score_answer``, and not when the verifier registry is imported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import reasoning_gym

_SCORERS: dict[str, Callable[[str | None, dict[str, Any]], float]] = {}


def score_answer(
    task: str, answer: str | None, entry: dict[str, Any], task_config: dict[str, Any] | None = None
) -> float:
    """The task's own ``score_answer(answer, entry)``; the scorer is built once per (task, config) per worker.

    A few scorers read their dataset's config (decimal_arithmetic, time_intervals, polynomial_equations,
    puzzle24), so ``task_config``, when given, rebuilds the dataset with the config the entry came from.
    """
    key = task if not task_config else f"{task}:{json.dumps(task_config, sort_keys=True, default=str)}"
    scorer = _SCORERS.get(key)
    if scorer is None:
        if task_config:
            scorer = reasoning_gym.create_dataset(task, **task_config).score_answer
        else:  # the dataset with its default config, as reasoning-gym's own get_score_answer_fn does
            scorer = reasoning_gym.get_score_answer_fn(task)  # type: ignore[assignment]
        _SCORERS[key] = scorer  # type: ignore[assignment]
    reward = float(scorer(answer, entry))
    if not math.isfinite(reward):
        raise ValueError(f"reasoning-gym scorer of {task!r} returned {reward}")
    return reward
