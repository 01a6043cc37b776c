"""Advantage estimators: a step's rewards -> one scalar advantage per completion.

Signature (one for the whole registry): ``(rewards [N], group_ids [N] long, cfg) -> advantages [N]``.
Completions of the same prompt share a group id; a group whose rewards are all equal gets advantage 0
(no gradient: the "silent" groups that dynamic sampling later removes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from trainer.algorithms.group_stats import group_mean, group_sizes, group_std
from trainer.config import AlgorithmConfig
from trainer.registry import Registry

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

AdvantageFn = Callable[["Tensor", "Tensor", AlgorithmConfig], "Tensor"]
ADVANTAGES: Registry[AdvantageFn] = Registry("advantage estimator")


@ADVANTAGES.register("grpo")
def grpo(rewards: Tensor, group_ids: Tensor, cfg: AlgorithmConfig) -> Tensor:
    """GRPO (Shao et al. 2024, DeepSeekMath): A_i = (r_i - mean_group) / (std + eps).

    ``scale_rewards`` picks the std: 'group' (the paper), 'batch' (std of the whole step, as TRL and
    Hu 2025 recommend against per-group difficulty bias), 'none' (no division; equals dr_grpo).
    The std is Bessel-corrected and ``advantage_eps`` (TRL: 1e-4) is added, exactly as TRL does.
    """
    centred = rewards - group_mean(rewards, group_ids)  # [N]
    if cfg.scale_rewards == "none":
        return centred
    std = group_std(rewards, group_ids) if cfg.scale_rewards == "group" else rewards.std().expand_as(rewards)
    return centred / (std + cfg.advantage_eps)


@ADVANTAGES.register("dr_grpo")
def dr_grpo(rewards: Tensor, group_ids: Tensor, cfg: AlgorithmConfig) -> Tensor:
    """Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training"): A_i = r_i - mean_group.

    Drops the std division, which up-weights too-easy and too-hard prompts. The paper also removes the
    length normalisation: pair it with ``loss_type: dr_grpo``.
    """
    return rewards - group_mean(rewards, group_ids)


@ADVANTAGES.register("rloo")
def rloo(rewards: Tensor, group_ids: Tensor, cfg: AlgorithmConfig) -> Tensor:
    """RLOO (Ahmadian et al. 2024; Kool et al. 2019): A_i = r_i - mean_{j != i} r_j.

    Computed as G/(G-1) * (r_i - mean_group), which is the same quantity. Unclipped and unstandardised
    (PAIR, 001:L55, analyses exactly this baseline). A group of one has no leave-one-out baseline: 0.
    """
    size = group_sizes(group_ids).to(rewards.dtype)
    centred = rewards - group_mean(rewards, group_ids)
    scale = size / (size - 1).clamp(min=1)
    return (centred * scale).where(size > 1, 0.0)


@ADVANTAGES.register("reinforce_pp")
def reinforce_pp(rewards: Tensor, group_ids: Tensor, cfg: AlgorithmConfig) -> Tensor:
    """REINFORCE++ with group baseline (Hu 2025): subtract the group mean, then whiten over the batch.

    As in verl's ``reinforce_plus_plus_baseline``: (r - mean_group), then (x - mean_batch) / (std_batch +
    eps). Batch-level normalisation is also what DLER (004:L467) uses against length-penalty bias.
    """
    centred = rewards - group_mean(rewards, group_ids)
    if centred.numel() < 2:
        return centred * 0.0
    return (centred - centred.mean()) / (centred.std() + cfg.advantage_eps)


def compute_advantages(rewards: Tensor, group_ids: Tensor, cfg: AlgorithmConfig) -> Tensor:
    """Look up ``cfg.advantage_estimator`` and apply it."""
    return ADVANTAGES.get(cfg.advantage_estimator)(rewards, group_ids, cfg)
