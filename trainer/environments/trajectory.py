"""One episode's tokens as they are built, turn by turn, and the padded batch they become.

Token-in, token-out: the completion is the model's sampled ids, exactly as the engine returned them, and the
environment's replies tokenised on their own (only the new text, ``add_special_tokens=False``), appended in order.
Nothing is ever decoded and tokenised again, so what the loss trains is what the model sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedTokenizerBase

from trainer.environments.records import TurnFinish, TurnRecord
from trainer.environments.turn_format import TurnFormat
from trainer.rollout.base import RolloutBatch


@dataclass
class ModelTokens:
    """One model turn as the engine sampled it (already cut to the episode's token budget)."""

    ids: list[int]
    logprobs: list[float]
    entropies: list[float]
    sampler_logprobs: list[float] | None
    finish: TurnFinish
    text: str


@dataclass
class Trajectory:
    """The growing completion of one episode: ids, which of them are the model's, and per-token data."""

    prompt_ids: list[int]
    budget: int  # completion tokens (model + environment) the episode may hold
    ids: list[int] = field(default_factory=list)
    model_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    sampler_logprobs: list[float] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)

    @property
    def room(self) -> int:
        """Tokens the budget still allows."""
        return self.budget - len(self.ids)

    def context(self) -> list[int]:
        """What the model continues from: the prompt and every token so far."""
        return self.prompt_ids + self.ids

    def add_model(self, turn: ModelTokens) -> tuple[int, int]:
        start = len(self.ids)
        self.ids += turn.ids
        self.model_mask += [1] * len(turn.ids)
        self.logprobs += turn.logprobs
        self.entropies += turn.entropies
        self.sampler_logprobs += turn.sampler_logprobs or [0.0] * len(turn.ids)
        return start, len(self.ids)

    def add_environment(self, ids: Sequence[int]) -> tuple[int, int]:
        """Append environment tokens: outside the loss (mask 0), logprob and entropy 0."""
        start = len(self.ids)
        self.ids += ids
        self.model_mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.entropies += [0.0] * len(ids)
        self.sampler_logprobs += [0.0] * len(ids)
        return start, len(self.ids)


def reply_ids(
    tokenizer: PreTrainedTokenizerBase, fmt: TurnFormat, reply: str, model_finish: str
) -> list[int]:
    """The tokens of an environment reply framed by ``fmt`` (see turn_format.py for why the parts are apart)."""

    def framing(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    content = (
        list(tokenizer(reply, add_special_tokens=False, split_special_tokens=True)["input_ids"])
        if reply
        else []
    )
    opening = framing(fmt.close_model_turn) if model_finish != "eos" else []
    return opening + framing(fmt.before_reply) + content + framing(fmt.after_reply)


def to_batch(
    trajectories: Sequence[Trajectory],
    finish_reasons: Sequence[str],
    tokenizer: PreTrainedTokenizerBase,
    pad_id: int,
    with_sampler_logprobs: bool,
    device: torch.device,
) -> RolloutBatch:
    """The episodes as one batch: prompts left-padded, completions right-padded, ``model_mask`` set."""
    width = max(max(len(t.ids) for t in trajectories), 1)
    prompt_width = max(len(t.prompt_ids) for t in trajectories)

    def right(rows: list[list[float]] | list[list[int]], value: float, dtype: torch.dtype) -> torch.Tensor:
        padded = [list(r) + [value] * (width - len(r)) for r in rows]
        return torch.tensor(padded, dtype=dtype, device=device)  # [N, T]

    lead = [prompt_width - len(t.prompt_ids) for t in trajectories]
    prompt_ids = torch.tensor(
        [[pad_id] * n + t.prompt_ids for n, t in zip(lead, trajectories, strict=True)], device=device
    )  # [N, Lp] left-padded
    prompt_mask = torch.tensor(
        [[0] * n + [1] * len(t.prompt_ids) for n, t in zip(lead, trajectories, strict=True)], device=device
    )
    return RolloutBatch(
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=right([t.ids for t in trajectories], pad_id, torch.long),
        completion_mask=right([[1] * len(t.ids) for t in trajectories], 0, torch.long),
        logprobs=right([t.logprobs for t in trajectories], 0.0, torch.float32),
        entropies=right([t.entropies for t in trajectories], 0.0, torch.float32),
        finish_reasons=list(finish_reasons),
        texts=tokenizer.batch_decode([t.ids for t in trajectories], skip_special_tokens=True),
        sampler_logprobs=(
            right([t.sampler_logprobs for t in trajectories], 0.0, torch.float32)
            if with_sampler_logprobs
            else None
        ),
        model_mask=right([t.model_mask for t in trajectories], 0, torch.long),
    )
