"""The training forward of the Tinker API: target-token logprobs of whole datums, in bounded micro-batches.

A Tinker datum is one sequence whose targets are already shifted (target t is predicted from input tokens
0..t), and the targets need not be the next input tokens, so every position is scored against its own
target. Rows are left-padded and positions come from the attention mask, exactly as the rollout engine and
the training step do (trainer/models/logprobs.py ``positions_from_mask``, ``token_logprobs_and_entropy``):
a datum built from a sampled completion scores the same logprobs the step's ``completion_logprobs`` gives.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers import PreTrainedModel

from trainer.models.logprobs import positions_from_mask, token_logprobs_and_entropy


@dataclass
class ScoredRows:
    """One micro-batch: which datums (``index``), their left-padded target logprobs and the real-token mask."""

    index: list[int]
    logp: Tensor  # [n, L] logprob of each target token (with grad when the caller wants one)
    entropy: Tensor  # [n, L] the policy's entropy at each position (detached)
    mask: Tensor  # [n, L] 1 on real positions, 0 on left padding

    def row(self, i: int, length: int) -> Tensor:
        """Row ``i``'s real positions, [length] (left padding dropped)."""
        return self.logp[i, self.logp.shape[1] - length :]


def micro_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Datum indices grouped so that each group's padded size (rows x longest) stays within ``max_tokens``.

    Sorted by length first, so similar lengths share a pass and padding stays small; a datum longer than
    ``max_tokens`` gets a pass of its own.

    >>> micro_batches([5, 1, 4, 2], 8)
    [[1, 3], [2], [0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (len(current) + 1) * lengths[i] > max_tokens:
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


def left_pad(rows: Sequence[Tensor], value: float | int, device: torch.device) -> Tensor:
    """Stack 1-D tensors into [n, L], padded on the left with ``value``."""
    width = max(int(r.shape[0]) for r in rows)
    out = torch.full((len(rows), width), value, dtype=rows[0].dtype, device=device)
    for i, r in enumerate(rows):
        out[i, width - r.shape[0] :] = r.to(device)
    return out


def score_rows(
    model: PreTrainedModel,
    index: list[int],
    input_tokens: Sequence[Tensor],
    targets: Sequence[Tensor],
    pad_id: int,
) -> ScoredRows:
    """Target logprobs of the datums ``index`` (their ``input_tokens`` and ``targets``, long [T_i]) under ``model``."""
    device = next(model.parameters()).device
    ids = left_pad([input_tokens[i] for i in index], pad_id, device)  # [n, L]
    mask = left_pad([torch.ones_like(input_tokens[i]) for i in index], 0, device)  # [n, L]
    tgt = left_pad([targets[i] for i in index], 0, device)  # [n, L]; padding scores token 0, masked later
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask), use_cache=False)
    logp, entropy = token_logprobs_and_entropy(out.logits, tgt, 1.0)  # [n, L] each
    return ScoredRows(index=index, logp=logp, entropy=entropy.detach(), mask=mask)


def scored_micro_batches(
    model: PreTrainedModel,
    input_tokens: Sequence[Tensor],
    targets: Sequence[Tensor],
    pad_id: int,
    max_tokens: int,
) -> Iterator[ScoredRows]:
    """Score every datum, one micro-batch at a time (the caller backpropagates each before the next)."""
    for index in micro_batches([int(t.shape[0]) for t in input_tokens], max_tokens):
        yield score_rows(model, index, input_tokens, targets, pad_id)
