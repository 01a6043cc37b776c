"""The rollout-engine seam and the tensors it returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    batch_size: int = 256  # completions generated together


@dataclass
class RolloutBatch:
    """N completions, right-padded to the longest one (T tokens).

    ``logprobs`` and ``entropies`` are taken under the temperature-scaled full-vocabulary distribution
    (the distribution the loss trains), even when top_p / top_k truncate what is sampled.
    """

    prompt_ids: Tensor  # [N, Lp] left-padded
    prompt_mask: Tensor  # [N, Lp]
    completion_ids: Tensor  # [N, T] right-padded with the pad id
    completion_mask: Tensor  # [N, T] 1 up to and including the EOS token
    logprobs: Tensor  # [N, T] sampled tokens' logprobs (0 on padding)
    entropies: Tensor  # [N, T] policy entropy at each position (0 on padding)
    # "eos" | "length"; a token-in continuation with stop strings adds "stop", and a multi-turn episode
    # (trainer/environments/) ends "done" | "turns" | "length"
    finish_reasons: list[str]
    texts: list[str]  # decoded completions, special tokens removed
    # The sampler's own logprobs [N, T] when the sampler is not the policy being trained (vLLM, or an older copy
    # of the policy in an asynchronous run): the trainer rescores the tokens into ``logprobs`` and corrects the
    # difference by importance weights (trainer/step/policy_scoring.py). None: ``logprobs`` are the policy's.
    sampler_logprobs: Tensor | None = None
    # [N, T] 1 on the tokens the policy generated, 0 on padding and on tokens an environment inserted between
    # them (a multi-turn rollout: trainer/environments/), which the loss must leave out and whose logprobs are 0.
    # None: every completion token is the policy's (a single-turn rollout), i.e. model_mask == completion_mask.
    model_mask: Tensor | None = None

    @property
    def lengths(self) -> Tensor:
        return self.completion_mask.sum(-1)  # [N]

    def __len__(self) -> int:
        return int(self.completion_ids.shape[0])

    def take(self, rows: Tensor, prompt_from: int = 0, width: int | None = None) -> RolloutBatch:
        """The completions at ``rows`` ([K] long), in that order, with the prompt columns from ``prompt_from`` on
        and the first ``width`` completion columns (all of them by default)."""
        p, c = slice(prompt_from, None), slice(0, width)
        picked = rows.tolist()
        return RolloutBatch(
            prompt_ids=self.prompt_ids[rows, p],
            prompt_mask=self.prompt_mask[rows, p],
            completion_ids=self.completion_ids[rows, c],
            completion_mask=self.completion_mask[rows, c],
            logprobs=self.logprobs[rows, c],
            entropies=self.entropies[rows, c],
            finish_reasons=[self.finish_reasons[i] for i in picked],
            texts=[self.texts[i] for i in picked],
            sampler_logprobs=None if self.sampler_logprobs is None else self.sampler_logprobs[rows, c],
            model_mask=None if self.model_mask is None else self.model_mask[rows, c],
        )

    @staticmethod
    def concat(batches: list[RolloutBatch], pad_id: int) -> RolloutBatch:
        """Join batches generated in chunks: prompts re-left-padded, completions re-right-padded."""
        if len(batches) == 1:
            return batches[0]

        def pad(tensors: list[Tensor], value: float, left: bool) -> Tensor:
            width = max(t.shape[1] for t in tensors)
            out = []
            for t in tensors:
                fill = torch.full((t.shape[0], width - t.shape[1]), value, dtype=t.dtype, device=t.device)
                out.append(torch.cat([fill, t] if left else [t, fill], dim=1))
            return torch.cat(out, dim=0)

        return RolloutBatch(
            prompt_ids=pad([b.prompt_ids for b in batches], pad_id, left=True),
            prompt_mask=pad([b.prompt_mask for b in batches], 0, left=True),
            completion_ids=pad([b.completion_ids for b in batches], pad_id, left=False),
            completion_mask=pad([b.completion_mask for b in batches], 0, left=False),
            logprobs=pad([b.logprobs for b in batches], 0.0, left=False),
            entropies=pad([b.entropies for b in batches], 0.0, left=False),
            finish_reasons=[r for b in batches for r in b.finish_reasons],
            texts=[t for b in batches for t in b.texts],
            sampler_logprobs=(
                pad([b.sampler_logprobs for b in batches], 0.0, left=False)  # type: ignore[misc]
                if all(b.sampler_logprobs is not None for b in batches)
                else None
            ),
            model_mask=(
                pad(
                    [b.completion_mask if b.model_mask is None else b.model_mask for b in batches],
                    0,
                    left=False,
                )
                if any(b.model_mask is not None for b in batches)
                else None
            ),
        )


class RolloutEngine(Protocol):
    """Generates completions for already-rendered prompt strings."""

    def generate(
        self, prompts: list[str], params: SamplingParams, generator: torch.Generator
    ) -> RolloutBatch: ...


class TokenEngine(Protocol):
    """Continues token ids: the seam of token-in, token-out multi-turn rollouts (trainer/environments/).

    Each context is used exactly as given, never decoded and re-tokenised; the result's ``prompt_ids`` are the
    contexts (left-padded) and its completions the new tokens. A completion ends at EOS, at ``max_new_tokens``, or
    (finish reason ``"stop"``) at the first token that completes one of ``stop`` in its decoded text, that token
    kept. A separate protocol because not every engine has it yet (the hf engine does; the vllm engine will).
    """

    def generate_from_ids(
        self,
        contexts: list[list[int]],
        params: SamplingParams,
        generator: torch.Generator,
        stop: Sequence[str] = (),
    ) -> RolloutBatch: ...
