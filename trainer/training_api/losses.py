"""Tinker's built-in losses, per token, on padded rows.

Each loss maps the target logprobs ``logp`` [n, L] (under the model being trained), the datum's loss inputs
(each [n, L], zero on padding) and the resolved ``loss_fn_config`` to a per-token loss [n, L]; the caller
masks padding and sums. Tinker sums over tokens and datums and never normalises ("Loss Functions",
tinker-docs.thinkingmachines.ai): the client scales ``weights`` or ``advantages`` for any mean it wants.

``q`` is the sampler's logprob of the token (input ``logprobs``), ``r = exp(logp - q)`` the importance ratio:

- ``cross_entropy``: ``-w * logp`` (supervised fine-tuning with per-token weights).
- ``importance_sampling``: ``-r * A``, REINFORCE with an importance weight for sampler/learner mismatch.
- ``ppo``: ``-min(r A, clip(r, lo, hi) A)`` (Schulman et al. 2017, "Proximal Policy Optimization
  Algorithms"), computed by the training step's own token-level clipped surrogate
  (trainer/methods/policy_losses.py ``ppo_clip_token``); Tinker gives the thresholds on the ratio itself,
  which is the step's ``epsilon = 1 - lo``, ``epsilon_high = hi - 1``.
- ``cispo``: ``-sg(clip(r, lo, hi)) * logp * A`` (CISPO, MiniMax-M1, Chen et al. 2025 "MiniMax-M1: Scaling
  Test-Time Compute Efficiently with Lightning Attention"): the clipped ratio only weighs the REINFORCE
  gradient, so no token's gradient is dropped the way PPO's clip drops it.
- ``dro``: ``-(logp A - beta/2 (logp - q)^2)`` (DRO, Richemond et al. 2024 "Offline Regularised Reinforcement
  Learning for Large Language Models Alignment"; Kimi k1.5): a quadratic penalty keeps the learner near the
  sampler, so off-policy and offline data can be used; the (soft) advantage is the client's to compute.

Tinker applies the RL losses to every position: positions that should not train (the prompt) carry advantage
0, which zeroes ``importance_sampling``, ``ppo`` and ``cispo`` there, while ``dro``'s penalty still acts on them
(as in Tinker's formula).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from trainer.methods.policy_losses import ppo_clip_token
from trainer.registry import Registry

LossFn = Callable[[Tensor, Mapping[str, Tensor], Mapping[str, float]], Tensor]
TINKER_LOSSES: Registry[LossFn] = Registry("Tinker loss")


@dataclass(frozen=True)
class _RatioClip:
    """The step's clip knobs (trainer/methods/views.py ``ClipSettings``) from Tinker's ratio thresholds."""

    epsilon: float
    clip_high: float
    dual_clip: bool = False
    dual_clip_c: float = 3.0


@TINKER_LOSSES.register("cross_entropy")
def cross_entropy(logp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> Tensor:
    """Weighted negative log-likelihood of the target tokens, ``-w * logp`` [n, L]."""
    return -inputs["weights"] * logp


@TINKER_LOSSES.register("importance_sampling")
def importance_sampling(logp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> Tensor:
    """``-exp(logp - q) * A`` [n, L]: its gradient is ``-r A grad logp``, REINFORCE reweighted to the sampler."""
    return -torch.exp(logp - inputs["logprobs"]) * inputs["advantages"]


@TINKER_LOSSES.register("ppo")
def ppo(logp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> Tensor:
    """``-min(r A, clip(r, lo, hi) A)`` [n, L] through the training step's token-level PPO surrogate."""
    clip = _RatioClip(
        epsilon=1.0 - config["clip_low_threshold"], clip_high=config["clip_high_threshold"] - 1.0
    )
    mask = torch.ones_like(logp)  # the caller masks padding; every position of a datum counts in Tinker
    return ppo_clip_token(logp, inputs["logprobs"], inputs["advantages"], mask, clip).per_token_loss


@TINKER_LOSSES.register("cispo")
def cispo(logp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> Tensor:
    """``-sg(clip(r, lo, hi)) * logp * A`` [n, L] (MiniMax-M1's CISPO)."""
    ratio = torch.exp(logp - inputs["logprobs"]).detach()
    weight = torch.clamp(ratio, config["clip_low_threshold"], config["clip_high_threshold"])
    return -weight * logp * inputs["advantages"]


@TINKER_LOSSES.register("dro")
def dro(logp: Tensor, inputs: Mapping[str, Tensor], config: Mapping[str, float]) -> Tensor:
    """``-(logp A - beta/2 (logp - q)^2)`` [n, L] (DRO's quadratic penalty towards the sampler)."""
    penalty = (logp - inputs["logprobs"]) ** 2
    return -(logp * inputs["advantages"] - 0.5 * config["beta"] * penalty)
