"""Per-token log-probabilities and entropies of given completions under a model (the training forward).

Positions are computed from the attention mask (``cumsum - 1``) both here and in the rollout engine, so
a left-padded prompt sees the same positions at sampling and at training time and the first PPO ratio
is exactly 1 up to float rounding.
"""

from __future__ import annotations

import torch
from torch import Tensor
from transformers import PreTrainedModel


def positions_from_mask(attention_mask: Tensor) -> Tensor:
    """Position ids that skip left padding. [B, L] -> [B, L]."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def token_logprobs_and_entropy(logits: Tensor, tokens: Tensor, temperature: float) -> tuple[Tensor, Tensor]:
    """From raw logits [B, T, V] and chosen tokens [B, T]: (logprob [B, T], entropy [B, T])."""
    logp_all = torch.log_softmax(logits.float() / temperature, dim=-1)  # [B, T, V]
    logp = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # [B, T]
    entropy = -(logp_all.exp() * logp_all).sum(-1)  # [B, T]
    return logp, entropy


def completion_logprobs(
    model: PreTrainedModel,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    completion_ids: Tensor,
    completion_mask: Tensor,
    temperature: float,
) -> tuple[Tensor, Tensor]:
    """(logprob [B, T], entropy [B, T]) of ``completion_ids`` given left-padded prompts."""
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)  # [B, Lp + T]
    attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
    T = completion_ids.shape[1]
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=positions_from_mask(attention_mask),
        use_cache=False,
        logits_to_keep=T + 1,
    )
    logits = out.logits[:, :-1, :]  # [B, T, V]: position t predicts completion token t
    return token_logprobs_and_entropy(logits, completion_ids, temperature)
