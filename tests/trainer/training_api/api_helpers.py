"""A training session on the built-in tiny:addition model, and helpers that build Tinker datums from samples."""

from __future__ import annotations

from collections.abc import Sequence

from trainer.training_api.limits import ApiLimits
from trainer.training_api.session import TrainingSession
from trainer.training_api.types import ApiDatum


def new_session(
    lora_rank: int | None = None, seed: int = 0, limits: ApiLimits | None = None
) -> TrainingSession:
    return TrainingSession.create(
        base_model="tiny:addition", lora_rank=lora_rank, seed=seed, limits=limits or ApiLimits(), device="cpu"
    )


def encode(session: TrainingSession, text: str) -> list[int]:
    return list(session.tokenizer(text, add_special_tokens=False)["input_ids"])


def sft_datum(prompt: list[int], answer: list[int]) -> ApiDatum:
    """Tinker's SFT datum: the sequence shifted by one, weight 1 on the answer's tokens only."""
    full = prompt + answer
    weights = [0.0] * (len(prompt) - 1) + [1.0] * len(answer)
    return ApiDatum(full[:-1], {"target_tokens": full[1:], "weights": weights})


def rl_datum(
    prompt: list[int], tokens: Sequence[int], logprobs: Sequence[float], advantage: float
) -> ApiDatum:
    """Tinker's RL datum: sampler logprobs and the advantage on the sampled tokens, 0 on the prompt."""
    full = prompt + list(tokens)
    pad = [0.0] * (len(prompt) - 1)
    return ApiDatum(
        full[:-1],
        {
            "target_tokens": full[1:],
            "logprobs": pad + list(logprobs),
            "advantages": pad + [advantage] * len(tokens),
        },
    )
