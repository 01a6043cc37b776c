"""Builders shared by webapp tests (fixtures are in conftest.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from trainer.sinks import TOKEN_CHANNELS, RolloutRecord
from webapp.experiments.models import Run

SMALL_CONFIG: dict[str, Any] = {
    "name": "addition",
    "data": {"source": "demo", "size": 32},
    "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 20, "prompts_per_step": 2, "learning_rate": 1e-4},
}


def make_user(username: str) -> User:
    return User.objects.create_user(username=username, password=f"pw-{username}-123")


def rollout_record(
    step: int, group: int = 0, sample_index: int = 0, n_tokens: int = 4, **overrides: Any
) -> RolloutRecord:
    """A RolloutRecord with deterministic per-token values (ref_logprob left out, as with beta = 0)."""
    values = {
        channel: [round(-0.5 * (i + 1) - c, 3) for i in range(n_tokens)]
        for c, channel in enumerate(TOKEN_CHANNELS)
        if channel != "ref_logprob"
    }
    fields: dict[str, Any] = {
        "step": step,
        "prompt_id": f"row-{group + 1}",
        "group": group,
        "sample_index": sample_index,
        "prompt": f"{group}+{sample_index}=",
        "completion": " 4" * n_tokens,
        "finish_reason": "eos",
        "reward": 1.0 if sample_index % 2 == 0 else 0.0,
        "rewards": {"exact": 1.0 if sample_index % 2 == 0 else 0.0},
        "correct": sample_index % 2 == 0,
        "details": {"exact": {"extracted": "4"}},
        "advantage": 0.5 if sample_index % 2 == 0 else -0.5,
        "token_ids": list(range(100, 100 + n_tokens)),
        "tokens": [" 4"] * n_tokens,
        "token_values": values,
        "answer": "4",
    }
    fields.update(overrides)
    return RolloutRecord(**fields)


def record_steps(run: Run, steps: range, *, groups: int = 2, samples: int = 2) -> None:
    """Store ``steps`` of a run with a couple of metrics and groups x samples rollouts each."""
    from webapp.experiments.services import run_record_step

    for step in steps:
        run_record_step(
            run_id=run.pk,
            step=step,
            max_steps=run.max_steps,
            metrics={"rollout/reward_mean": step / 10, "actor/pg_loss": -step / 100},
            rollouts=[rollout_record(step, g, s) for g in range(groups) for s in range(samples)],
        )


def episode_json(**changes: Any) -> dict[str, Any]:
    """A 3-turn episode over 12 completion tokens, as trainer/environments/records.py ``EpisodeRecord.to_json`` writes
    it: a calculator call that works, then one that fails and one that was malformed, then the answer."""

    def call(
        name: str, arguments: dict[str, Any] | None, result: str, status: str, seconds: float
    ) -> dict[str, Any]:
        return {"name": name, "arguments": arguments, "result": result, "status": status, "seconds": seconds}

    turns = [
        {"model_span": [0, 3], "env_span": [3, 5], "finish": "stop", "reward": None, "reply_truncated": False,
         "tool_calls": [call("calc", {"expression": "6*7"}, "42", "ok", 0.012)], "info": {}},
        {"model_span": [5, 8], "env_span": [8, 10], "finish": "stop", "reward": 0.0, "reply_truncated": True,
         "tool_calls": [call("calc", {"expression": "1/0"}, "error: division by zero", "error", 0.004),
                        call("", None, "error: the call is not valid JSON", "invalid", 0.0)], "info": {"step": 2}},
        {"model_span": [10, 12], "env_span": [12, 12], "finish": "eos", "reward": 1.0, "reply_truncated": False,
         "tool_calls": [], "info": {}},
    ]  # fmt: skip
    episode: dict[str, Any] = {
        "turns": turns,
        "finish_reason": "done",
        "score": {"reward": 1.0, "correct": True, "detail": {"expected": "42"}},
    }
    episode.update(changes)
    return episode
