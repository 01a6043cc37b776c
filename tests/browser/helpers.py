"""Seeding for browser tests and the benchmark: a user with a project and a run whose rollouts are given."""

from __future__ import annotations

import math
from typing import Any

from trainer.sinks import TOKEN_CHANNELS, RolloutRecord

PASSWORD = "pw-alice-123"
# The judge endpoint the live server allows (tests/browser/conftest.py live_server_url, RLVR_JUDGE_ENDPOINTS): set in
# that server's environment only, never in this process's, so no other test or worker inherits it.
JUDGE_URL = "http://judge.internal:8000/v1"


def seed_run(*, config: dict[str, Any] | None = None, username: str = "alice") -> Any:
    """alice (password ``pw-alice-123``), her project "Lab", an experiment and a queued run."""
    from tests.workers.helpers import launch_run, make_project, make_user

    owner = make_user(username)
    small = {
        "name": "browser", "data": {"source": "demo", "size": 32},
        "rollout": {"num_generations": 4, "max_completion_length": 4},
        "training": {"max_steps": 20, "prompts_per_step": 2},
    }  # fmt: skip
    from django.test import override_settings

    with override_settings(RLVR_ENQUEUE=False):  # seeded runs never reach a worker
        return launch_run(owner, make_project(owner, "Lab"), config or small)


def token_record(
    step: int,
    group: int,
    sample_index: int,
    tokens: list[str],
    *,
    completion: str | None = None,
    **overrides: Any,
) -> RolloutRecord:
    """A rollout with distinct, deterministic per-token values in every channel (ref_logprob included)."""
    n = len(tokens)
    values: dict[str, list[float]] = {
        "logprob": [-0.05 - 0.9 * abs(math.sin(i * 0.37)) for i in range(n)],
        "old_logprob": [-0.1 - 0.8 * abs(math.sin(i * 0.41)) for i in range(n)],
        "ref_logprob": [-0.2 - 0.7 * abs(math.cos(i * 0.29)) for i in range(n)],
        "entropy": [round(0.1 + 2.0 * abs(math.sin(i * 0.13 + sample_index)), 6) for i in range(n)],
        "advantage": [round(math.sin(i * 0.21 + group), 6) for i in range(n)],
        "loss_mask": [0.0 if i % 17 == 16 else 1.0 for i in range(n)],
        "teacher_logprob": [-0.15 - 0.6 * abs(math.sin(i * 0.23)) for i in range(n)],
        "teacher_entropy": [round(0.2 + 1.5 * abs(math.cos(i * 0.17)), 6) for i in range(n)],
        "segment": [float(i // 5) for i in range(n)],
        "step_score": [math.nan] * n,  # not recorded: a rollout without steps
        "env_token": [math.nan] * n,  # not recorded: a single-turn rollout
    }
    assert set(values) == set(TOKEN_CHANNELS)
    fields: dict[str, Any] = {
        "step": step, "prompt_id": f"row-{group + 1}", "group": group, "sample_index": sample_index,
        "prompt": f"What is {group} + {sample_index}?", "completion": completion if completion is not None else "".join(tokens),
        "finish_reason": "eos", "reward": 1.0 if sample_index % 2 == 0 else 0.0,
        "rewards": {"regex_format": 1.0 if sample_index % 2 == 0 else 0.0},
        "correct": sample_index % 2 == 0,
        "details": {"regex_format": {"extracted": "4" if sample_index % 2 == 0 else None, "reason": "no digit" if sample_index % 2 else ""}},
        "advantage": 0.5 if sample_index % 2 == 0 else -0.5,
        "token_ids": [1000 + i for i in range(n)], "tokens": tokens, "token_values": values, "answer": "4",
    }  # fmt: skip
    fields.update(overrides)
    return RolloutRecord(**fields)


def store_step(
    run: Any, step: int, records: list[RolloutRecord], metrics: dict[str, float] | None = None
) -> None:
    from webapp.experiments.services import run_record_step

    run_record_step(
        run_id=run.pk, step=step, max_steps=run.max_steps, metrics=metrics or {}, rollouts=records
    )


def long_tokens(n: int) -> list[str]:
    """``n`` tokens of ordinary prose-and-code text, with spaces, tabs and newlines among them."""
    words = [
        "The",
        " answer",
        " is",
        " 4",
        ".",
        "\n",
        "def",
        " f",
        "(x",
        "):",
        "\n",
        "\t",
        "return",
        " x",
        " +",
        " 1",
        "\n",
    ]
    return [words[i % len(words)] for i in range(n)]
