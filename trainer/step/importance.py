"""Truncated importance weights between the policy and the sampler of a batch, and what they measure.

Pure tensor functions, shared by the rescoring stage (trainer/step/policy_scoring.py) and the update, which
weighs an off-policy batch itself when the rescoring was left to its forward (trainer/step/optimize.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from trainer.step.state import ImportanceWeights


def truncated_weights(policy_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor, cap: float) -> Tensor:
    """[N, T] w = min(pi_policy / pi_sampler, cap) on the mask's tokens; 1 elsewhere and where the sampler's
    logprob is missing (NaN)."""
    valid, delta = _valid_delta(policy_logprobs, sampler_logprobs, mask)
    return torch.where(valid, delta.exp().clamp(max=cap), torch.ones_like(delta))


def importance_weights(
    policy_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor, cap: float
) -> ImportanceWeights:
    """Truncated per-token importance weights and their metrics; a token whose sampler logprob is missing
    (NaN) gets weight 1."""
    valid, delta = _valid_delta(policy_logprobs, sampler_logprobs, mask)
    ratio = delta.exp()
    weights = torch.where(valid, ratio.clamp(max=cap), torch.ones_like(ratio))
    n = int(valid.sum())
    if n == 0:
        return ImportanceWeights(weights, {})
    k3 = (ratio - 1 - delta)[valid]
    return ImportanceWeights(
        weights,
        {
            "async/is_weight_mean": float(weights[valid].mean()),
            "async/is_weight_max": float(ratio[valid].max()),
            "async/is_clipped_frac": float((ratio[valid] > cap).float().mean()),
            "async/sampler_trainer_kl": float(k3.mean()),
            "async/sampler_logprob_gap": float(delta[valid].abs().mean()),
        },
    )


def _valid_delta(policy_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """(the tokens with both logprobs [N, T] bool, log pi_policy - log pi_sampler there and 0 elsewhere)."""
    valid = mask.bool() & ~torch.isnan(sampler_logprobs)
    delta = torch.where(
        valid, policy_logprobs - torch.nan_to_num(sampler_logprobs), torch.zeros_like(policy_logprobs)
    )
    return valid, delta
