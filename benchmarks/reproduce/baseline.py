"""The shared plain-GRPO baseline every method is compared against, and how overrides are applied.

The reasoning task: chain arithmetic with a scratchpad (trainer/data/chain_arithmetic.py, mixed levels,
``"(9+6)*4-5="`` -> ``"15*4-5=60-5=55;#### 55"``), 512 training problems, the built-in ``tiny:chain`` student
(it answers two problems in three bare, without working, and is right about one time in ten), 8 prompts x 8
completions of up to 80 tokens at temperature 1, the chain_arithmetic verifier, GRPO advantages, DAPO
token-sum loss, lr 1e-4 constant, no KL: the demo preset's settings without its teacher (demo preset:
greedy accuracy 0.09 -> 0.16-0.18 in 200 plain-GRPO steps). The teacher rows use ``tiny:chain-teacher``.
One step takes about 0.7 s on one quiet core.
"""

from __future__ import annotations

import copy
from typing import Any

STUDENT = "tiny:chain"
TEACHER = "tiny:chain-teacher"

BASELINE: dict[str, Any] = {
    "name": "reproduce-baseline",
    "model": {"name_or_path": STUDENT, "device": "cpu"},
    "data": {"source": "chain_arithmetic", "task": "mixed", "size": 512, "data_seed": 0},
    "rollout": {"num_generations": 8, "max_completion_length": 80, "temperature": 1.0},
    "verifiers": [{"name": "chain_arithmetic"}],
    "algorithm": {"advantage_estimator": "grpo", "loss_type": "dapo", "beta": 0.0},
    "training": {"prompts_per_step": 8, "micro_batch_size": 64, "learning_rate": 1e-4},
}


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied recursively (dicts merge, anything else replaces)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def arm_config(
    overrides: dict[str, Any], seed: int, steps: int, output_dir: str, eval_every: int
) -> dict[str, Any]:
    """The full experiment dict of one arm: baseline + overrides + the harness's own fields."""
    config = deep_merge(BASELINE, overrides)
    return deep_merge(
        config,
        {
            "seed": seed,
            "training": {"max_steps": steps},
            "checkpoint": {
                "output_dir": output_dir,
                "save_steps": eval_every,
                "save_total_limit": steps // eval_every + 2,
            },
        },
    )
