"""Verifier + teacher fusion: where the teacher's per-token gap meets the verifier reward (METHODS.md §5).

One registry entry per ``teacher.fusion`` value, each with the same two stages:

  rewards            [N] verifier rewards -> [N], BEFORE group normalisation (PUU changes the ranking here)
  token_advantages   [N, T] per-token advantages after token credit -> [N, T] (OPD, additive, modulated)

``gap`` is ``log pi_teacher(y_t) - log pi_old(y_t)`` on the student's sampled tokens (trainer/teacher.py),
the per-token reverse-KL estimate on-policy distillation maximises. The OPD-then-RL schedule is
``fusion_at_step``: 'opd' turns into 'none' after ``teacher.opd_until_step``. Without teacher signals
(no teacher, or a step after the switch) every stage is the identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainer.config import TeacherConfig
from trainer.registry import Registry

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

    from trainer.teacher import TeacherSignals

RewardStage = Callable[["Tensor", "TeacherSignals", TeacherConfig], "Tensor"]
TokenStage = Callable[["Tensor", "Tensor", "TeacherSignals", TeacherConfig], "Tensor"]


def _same_rewards(rewards: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    return rewards


def _same_tokens(token_advantages: Tensor, loss_mask: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    return token_advantages


@dataclass(frozen=True)
class Fusion:
    """The two stages of one fusion mode; the docstring of the module says where each runs."""

    doc: str
    rewards: RewardStage = _same_rewards
    token_advantages: TokenStage = _same_tokens


FUSIONS: Registry[Fusion] = Registry("teacher fusion")


def sequence_teacher_score(signals: TeacherSignals) -> Tensor:
    """Length-normalised teacher-to-anchor path log-ratio per completion: mean_t gap_t. [N]."""
    tokens = signals.mask.sum(-1).clamp(min=1)  # [N]
    return (signals.gap * signals.mask).sum(-1) / tokens


def opd_advantages(token_advantages: Tensor, loss_mask: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    """OPD (001:L83, 001:L33; [ext] Agarwal et al. 2024 / Thinking Machines 2025): A_t = c * gap_t.

    The verifier advantage is dropped; each sampled token is pushed up where the teacher likes it more than
    the student did and down where less (the per-token reverse KL, no discounting over later tokens).
    """
    return cfg.opd_coef * signals.gap * loss_mask.to(signals.gap.dtype)  # [N, T]


def additive_advantages(token_advantages: Tensor, loss_mask: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    """Weighted-additive fusion (001:L33, 001:L83): A_t = A_verifier,t + lambda * gap_t."""
    return token_advantages + cfg.additive_coef * signals.gap * loss_mask.to(signals.gap.dtype)


def modulation_weights(token_advantages: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    """w_t = clamp(exp(alpha * sign(A_t) * gap_t), 1/M, M). [N, T]."""
    import torch

    w = torch.exp(cfg.modulation_strength * torch.sign(token_advantages) * signals.gap)
    return w.clamp(1.0 / cfg.modulation_max, cfg.modulation_max)


def modulated_advantages(token_advantages: Tensor, loss_mask: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    """Teacher-modulated rescaling (001:L33): A_t = A_verifier,t * w_t, w_t from the teacher ratio pi_T / pi_old.

    The abstract gives no form; ours is sign-aware: in a rewarded completion the tokens the teacher prefers
    get more credit, in a penalised one the tokens it disprefers get more blame; w_t > 0 never flips a sign.
    """
    return token_advantages * modulation_weights(token_advantages, signals, cfg)


def puu_rewards(rewards: Tensor, signals: TeacherSignals, cfg: TeacherConfig) -> Tensor:
    """PUU, Path-Utility Unification (UECR-GRPO, 001:L3): r + beta * mean_t gap_t, before group normalisation,
    so the teacher can reorder a group's completions. The anchor of the log-ratio is the sampling policy
    (the paper's anchor is not named in the abstract); with token_credit 'ecr' this is UECR-GRPO."""
    return rewards + cfg.puu_coef * sequence_teacher_score(signals)


FUSIONS.register("none")(Fusion("Verifier only; the teacher, if any, is recorded for the dashboard."))
FUSIONS.register("opd")(Fusion("On-policy distillation: per-token teacher gap replaces the verifier.",
                               token_advantages=opd_advantages))
FUSIONS.register("additive")(Fusion("Weighted-additive: A_verifier + lambda * gap.", token_advantages=additive_advantages))
FUSIONS.register("modulated")(Fusion("Teacher-modulated rescaling of the verifier advantage.",
                                     token_advantages=modulated_advantages))
FUSIONS.register("puu")(Fusion("PUU: reward + length-normalised teacher score before normalisation.", rewards=puu_rewards))


def fusion_at_step(cfg: TeacherConfig, step: int) -> str:
    """The fusion mode in force at ``step``: 'opd' becomes 'none' after opd_until_step (OPD-then-RL, 001:L33)."""
    if cfg.fusion == "opd" and cfg.opd_until_step is not None and step > cfg.opd_until_step:
        return "none"
    return cfg.fusion


def fuse_rewards(rewards: Tensor, signals: TeacherSignals | None, cfg: TeacherConfig, step: int) -> Tensor:
    """The rewards the advantage estimator sees at ``step``. [N] -> [N]."""
    if signals is None:
        return rewards
    return FUSIONS.get(fusion_at_step(cfg, step)).rewards(rewards, signals, cfg)


def fuse_token_advantages(
    token_advantages: Tensor, loss_mask: Tensor, signals: TeacherSignals | None, cfg: TeacherConfig, step: int
) -> Tensor:
    """The per-token advantages the policy loss sees at ``step``. [N, T] -> [N, T]."""
    if signals is None:
        return token_advantages
    return FUSIONS.get(fusion_at_step(cfg, step)).token_advantages(token_advantages, loss_mask, signals, cfg)
