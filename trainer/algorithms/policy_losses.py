"""Policy losses: the per-token surrogate objective, keyed by ``importance_sampling_level``.

Signature: ``(logp [n, T], old_logp [n, T], adv [n, T], mask [n, T], cfg) -> PolicyLossOutput``.
Aggregation over tokens is a separate axis (aggregation.py), so GRPO, Dr. GRPO and DAPO are
combinations of the same surrogate with different normalisations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainer.config import AlgorithmConfig
from trainer.registry import Registry

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


@dataclass
class PolicyLossOutput:
    per_token_loss: Tensor  # [n, T]
    ratio: Tensor  # [n, T] or [n, 1]: the importance weight that was clipped
    clipped: Tensor  # [n, T] bool: the clipped branch was active (for actor/clip_frac)


PolicyLossFn = Callable[["Tensor", "Tensor", "Tensor", "Tensor", AlgorithmConfig], PolicyLossOutput]
POLICY_LOSSES: Registry[PolicyLossFn] = Registry("policy loss")


def _clipped_surrogate(log_ratio: Tensor, adv: Tensor, cfg: AlgorithmConfig) -> PolicyLossOutput:
    import torch

    ratio = torch.exp(log_ratio)
    clipped_ratio = torch.clamp(ratio, 1.0 - cfg.epsilon, 1.0 + cfg.clip_high)
    loss_unclipped = ratio * adv
    loss_clipped = clipped_ratio * adv
    per_token_loss = -torch.min(loss_unclipped, loss_clipped)  # [n, T]
    clipped = (loss_clipped < loss_unclipped).expand_as(adv)
    return PolicyLossOutput(per_token_loss=per_token_loss, ratio=ratio, clipped=clipped)


@POLICY_LOSSES.register("token")
def ppo_clip_token(logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor, cfg: AlgorithmConfig) -> PolicyLossOutput:
    """PPO clipped surrogate per token (Schulman et al. 2017), with clip-higher (DAPO, Yu et al. 2025):
    -min(rho_t A_t, clip(rho_t, 1 - epsilon, 1 + epsilon_high) A_t), rho_t = pi(y_t) / pi_old(y_t)."""
    return _clipped_surrogate(logp - old_logp, adv, cfg)


@POLICY_LOSSES.register("sequence")
def gspo_sequence(logp: Tensor, old_logp: Tensor, adv: Tensor, mask: Tensor, cfg: AlgorithmConfig) -> PolicyLossOutput:
    """GSPO (Zheng et al. 2025): one clipped ratio per completion, the length-normalised (geometric-mean)
    sequence ratio s_i = exp(mean_t log rho_t). Same as TRL's importance_sampling_level='sequence'."""
    log_ratio = ((logp - old_logp) * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # [n]
    return _clipped_surrogate(log_ratio[:, None], adv, cfg)
