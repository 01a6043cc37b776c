"""Verifier + teacher fusion (axis ``teacher.fusion``): where the teacher's per-token gap meets the verifier
reward (METHODS.md section 5). A fusion method has up to two hooks:
  reward_fusion   ``(rewards [N], signals, params, step) -> [N]``, BEFORE group normalisation (PUU reorders here)
  token_fusion    ``(token_advantages [N, T], loss_mask [N, T], signals, params, step) -> [N, T]`` (OPD, additive,
                  modulated)
and may say at which steps it acts (``schedule``: OPD-then-RL's OPD stops after ``until_step``); a hook point a
method has no hook at is the identity, as is every hook point without teacher signals.
``gap`` is ``log pi_teacher(y_t) - log pi_old(y_t)`` on the student's sampled tokens (trainer/step/teacher.py),
the per-token reverse-KL estimate on-policy distillation maximises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.methods.axes import Axis, hooks_at

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

    from trainer.methods.views import ChoosesFusion, TeacherSignalsView

FUSIONS: Axis[Any] = Axis(
    "teacher fusion",
    "teacher.fusion",
    "token_fusion",
    default="none",
    description="How the teacher's per-token signal meets the verifier reward (on-policy distillation and its fusions).",
)


def sequence_teacher_score(signals: TeacherSignalsView) -> Tensor:
    """Length-normalised teacher-to-anchor path log-ratio per completion: mean_t gap_t. [N]."""
    tokens = signals.mask.sum(-1).clamp(min=1)  # [N]
    return (signals.gap * signals.mask).sum(-1) / tokens


@FUSIONS.method("none", point="schedule")
def verifier_only(params: Any, step: int) -> bool:
    """Verifier only; the teacher, if any, is recorded for the dashboard (and read by token credit 'ecr')."""
    return False


class OPDParams(BoundedModel):
    coef: float = Field(
        1.0, gt=0, le=1000, description="Scale of the per-token reverse-KL advantage (1 = plain OPD)."
    )
    until_step: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="OPD-then-RL: steps 1..until_step distil from the teacher and later steps train on the verifier "
        "reward alone (the paper switches on the OPD validation score; here at a fixed step). null: OPD for the "
        "whole run.",
    )


@FUSIONS.method("opd", params=OPDParams)
def opd_advantages(
    token_advantages: Tensor, loss_mask: Tensor, signals: TeacherSignalsView, params: OPDParams, step: int
) -> Tensor:
    """On-policy distillation: the per-token teacher gap replaces the verifier advantage, A_t = coef x gap_t.

    The verifier advantage is dropped; each sampled token is pushed up where the teacher likes it more than
    the student did and down where less (the per-token reverse KL, no discounting over later tokens).
    Sources: 001:L83, 001:L33; [ext] Agarwal et al. 2024 / Thinking Machines 2025.
    """
    return params.coef * signals.gap * loss_mask.to(signals.gap.dtype)  # [N, T]


@FUSIONS.method("opd", point="schedule")
def opd_schedule(params: OPDParams, step: int) -> bool:
    """OPD-then-RL: OPD acts up to ``until_step``, then the verifier reward alone trains."""
    return params.until_step is None or step <= params.until_step


FUSIONS.method("opd", point="needs_teacher")(opd_schedule)


class AdditiveParams(BoundedModel):
    coef: float = Field(
        0.1,
        gt=0,
        le=1000,
        description="lambda in A_t = A_verifier + lambda x gap_t (the OPD paper shows a fixed lambda can collapse "
        "entropy when the gap dwarfs the bounded verifier advantage).",
    )


@FUSIONS.method("additive", params=AdditiveParams)
def additive_advantages(
    token_advantages: Tensor,
    loss_mask: Tensor,
    signals: TeacherSignalsView,
    params: AdditiveParams,
    step: int,
) -> Tensor:
    """Weighted-additive fusion: A_t = A_verifier,t + lambda x gap_t.

    Sources: 001:L33, 001:L83.
    """
    return token_advantages + params.coef * signals.gap * loss_mask.to(signals.gap.dtype)


class ModulatedParams(BoundedModel):
    strength: float = Field(
        1.0, gt=0, le=1000, description="alpha in w_t = exp(alpha x sign(A) x gap_t), clamped."
    )
    max: float = Field(
        2.0,
        gt=1,
        le=1000,
        description="w_t is clamped to [1/max, max], so the teacher rescales a token's credit but never flips its sign.",
    )


def modulation_weights(
    token_advantages: Tensor, signals: TeacherSignalsView, params: ModulatedParams
) -> Tensor:
    """w_t = clamp(exp(alpha * sign(A_t) * gap_t), 1/M, M). [N, T]."""
    import torch

    w = torch.exp(params.strength * torch.sign(token_advantages) * signals.gap)
    return w.clamp(1.0 / params.max, params.max)


@FUSIONS.method("modulated", params=ModulatedParams)
def modulated_advantages(
    token_advantages: Tensor,
    loss_mask: Tensor,
    signals: TeacherSignalsView,
    params: ModulatedParams,
    step: int,
) -> Tensor:
    """Teacher-modulated rescaling of the verifier advantage: A_t = A_verifier,t x w_t, w_t from pi_T / pi_old.

    The abstract (001:L33) gives no form; ours is sign-aware: in a rewarded completion the tokens the teacher
    prefers get more credit, in a penalised one the tokens it disprefers get more blame; w_t > 0 never flips a
    sign.
    """
    return token_advantages * modulation_weights(token_advantages, signals, params)


class PUUParams(BoundedModel):
    coef: float = Field(
        0.1,
        gt=0,
        le=1000,
        description="reward + coef x mean over the completion's tokens of (log pi_teacher - log pi_old), before group "
        "normalisation; the sampling policy is the anchor (UECR-GRPO's Path-Utility Unification).",
    )


@FUSIONS.method("puu", params=PUUParams, point="reward_fusion")
def puu_rewards(rewards: Tensor, signals: TeacherSignalsView, params: PUUParams, step: int) -> Tensor:
    """PUU (UECR-GRPO): reward + length-normalised teacher score before group normalisation; pair with 'ecr'.

    So the teacher can reorder a group's completions (001:L3). The anchor of the log-ratio is the sampling
    policy (the paper's anchor is not named in the abstract); with token_credit 'ecr' this is UECR-GRPO.
    """
    return rewards + params.coef * sequence_teacher_score(signals)


for _name in ("additive", "modulated", "puu"):
    FUSIONS.method(_name, point="needs_teacher")(lambda params, step: True)

for _name in ("opd", "additive", "modulated", "puu"):

    @FUSIONS.check(_name)
    def _needs_a_teacher(config: Any, params: Any, _name: str = _name) -> None:
        if not config.teacher.enabled:
            raise ValueError(
                f"teacher.fusion {_name!r} needs a teacher: set teacher.name_or_path (e.g. 'tiny:chain-teacher', "
                "built by `rlvr init-model --teacher`) or teacher.mode 'self' (the policy with the reference answer)"
            )


@FUSIONS.check("opd")
def _opd_replaces_credit(config: Any, params: OPDParams) -> None:
    """OPD replaces the per-token advantages by the teacher gap: what shapes the verifier advantage has no effect
    while it acts, so choosing it for the whole run is refused (with OPD-then-RL it acts after the switch)."""
    if params.until_step is not None:
        return
    unused = (
        [f"algorithm.token_credit {config.algorithm.token_credit.name!r}"]
        if config.algorithm.token_credit.name != "uniform"
        else []
    )
    unused += [f"shaping.advantage_shaping {c.name!r}" for c in config.shaping.advantage_shaping]
    if unused:
        raise ValueError(
            f"teacher.fusion 'opd' replaces every token's advantage by the teacher gap for the whole run, so "
            f"{' and '.join(unused)} would have no effect: remove it, or set the opd params' until_step (OPD-then-RL)"
        )


def fusion_acts(cfg: ChoosesFusion, step: int) -> bool:
    """Whether the configured fusion changes anything at ``step`` (OPD-then-RL: not after the switch)."""
    method = cfg.fusion.active()
    return (method.has_hook("reward_fusion") or method.has_hook("token_fusion")) and method.acts_at(step)


def fuse_rewards(
    rewards: Tensor, signals: TeacherSignalsView | None, cfg: ChoosesFusion, step: int
) -> Tensor:
    """The rewards the advantage estimator sees at ``step`` (the ``reward_fusion`` hook point). [N] -> [N]."""
    if signals is None:
        return rewards
    for hook, params in hooks_at("reward_fusion", [cfg.fusion.active()], step):
        rewards = hook(rewards, signals, params, step)
    return rewards


def fuse_token_advantages(
    token_advantages: Tensor,
    loss_mask: Tensor,
    signals: TeacherSignalsView | None,
    cfg: ChoosesFusion,
    step: int,
) -> Tensor:
    """The per-token advantages the policy loss sees at ``step`` (the ``token_fusion`` hook point). [N, T] -> [N, T]."""
    if signals is None:
        return token_advantages
    for hook, params in hooks_at("token_fusion", [cfg.fusion.active()], step):
        token_advantages = hook(token_advantages, loss_mask, signals, params, step)
    return token_advantages
