"""Advantage estimators: a step's rewards -> one scalar advantage per completion.

Axis ``algorithm.advantage_estimator``, hook point ``advantage``. Hook signature: ``(rewards [N], group_ids [N]
long, params, lengths=None) -> advantages [N]``. Completions of the same prompt share a group id; a group whose rewards are all equal gets
advantage 0 (no gradient: the "silent" groups that dynamic sampling later removes). ``lengths`` [N] are
the completions' token counts; only the token-weighted ``reinforce_pp`` reads them (None: equal weights).

In a data-parallel run each process holds whole groups, so the group statistics are local; what spans the
step (``reinforce_pp``'s whitening, ``grpo``'s batch std) is taken over every process's values
(trainer/distributed/context.py ``all_ranks``), so each process gets its share of the 1-process advantages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.methods.axes import Axis, the_hook
from trainer.methods.group_stats import group_mean, group_sizes, group_std

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

    from trainer.methods.views import ChoosesAdvantage

# verl's masked_whiten adds this to the variance (inside the square root); reinforce_pp copies it.
VERL_WHITEN_EPS = 1e-8


class AdvantageFn(Protocol):
    def __call__(
        self, rewards: Tensor, group_ids: Tensor, params: Any, lengths: Tensor | None = None
    ) -> Tensor: ...


ADVANTAGES: Axis[AdvantageFn] = Axis(
    "advantage estimator",
    "algorithm.advantage_estimator",
    "advantage",
    default="grpo",
    description="How a step's rewards become one advantage per completion.",
)


class GRPOParams(BoundedModel):
    scale_rewards: Literal["group", "batch", "none"] = Field(
        "group",
        description="Divide by the group's std ('group', GRPO), the whole batch's std ('batch', Hu 2025 / DLER) or "
        "not at all ('none', as Dr. GRPO recommends). TRL name.",
    )
    advantage_eps: float = Field(
        1e-4, gt=0, le=1, description="Added to the std before dividing (TRL uses 1e-4)."
    )


@ADVANTAGES.method("grpo", params=GRPOParams)
def grpo(rewards: Tensor, group_ids: Tensor, params: GRPOParams, lengths: Tensor | None = None) -> Tensor:
    """GRPO (Shao et al. 2024, DeepSeekMath): A_i = (r_i - mean_group) / (std + eps).

    ``scale_rewards`` picks the std: 'group' (the paper), 'batch' (std of the whole step, as TRL and
    Hu 2025 recommend against per-group difficulty bias), 'none' (no division; equals dr_grpo).
    The std is Bessel-corrected and ``advantage_eps`` (TRL: 1e-4) is added, exactly as TRL does.
    """
    from trainer.distributed.context import all_ranks

    centred = rewards - group_mean(rewards, group_ids)  # [N]
    if params.scale_rewards == "none":
        return centred
    if params.scale_rewards == "group":
        std = group_std(rewards, group_ids)  # [N]
    else:
        std = all_ranks(rewards).std().expand_as(rewards)  # the step's rewards, every process's share
    return centred / (std + params.advantage_eps)


@ADVANTAGES.method("dr_grpo")
def dr_grpo(rewards: Tensor, group_ids: Tensor, params: Any, lengths: Tensor | None = None) -> Tensor:
    """Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training"): A_i = r_i - mean_group.

    Drops the std division, which up-weights too-easy and too-hard prompts. The paper also removes the
    length normalisation: pair it with ``loss_type: dr_grpo``.
    """
    return rewards - group_mean(rewards, group_ids)


@ADVANTAGES.method("rloo")
def rloo(rewards: Tensor, group_ids: Tensor, params: Any, lengths: Tensor | None = None) -> Tensor:
    """RLOO (Ahmadian et al. 2024; Kool et al. 2019): A_i = r_i - mean_{j != i} r_j.

    Computed as G/(G-1) * (r_i - mean_group), which is the same quantity. Unclipped and unstandardised
    (PAIR, 001:L55, analyses exactly this baseline). A group of one has no leave-one-out baseline: 0.
    """
    size = group_sizes(group_ids).to(rewards.dtype)
    centred = rewards - group_mean(rewards, group_ids)
    scale = size / (size - 1).clamp(min=1)
    return (centred * scale).where(size > 1, 0.0)


@ADVANTAGES.method("reinforce_pp")
def reinforce_pp(rewards: Tensor, group_ids: Tensor, params: Any, lengths: Tensor | None = None) -> Tensor:
    """REINFORCE++ with group baseline (Hu 2025): subtract the group mean, then whiten over the batch's tokens.

    As verl's ``reinforce_plus_plus_baseline``: x_i = r_i - mean_group, broadcast to the completion's tokens,
    then ``masked_whiten`` over the step's [N, T] response mask: each x_i counts once per token (weight L_i),
    mean m = sum L_i x_i / sum L_i, unbiased variance v = sum L_i (x_i - m)^2 / (sum L_i - 1), and
    A_i = (x_i - m) / sqrt(v + 1e-8). So long completions pull the mean and spread: rewards [1, 0 | 1, 0] with
    lengths [1, 3 | 2, 2] give +1.208 / -0.725, not the per-sequence +-0.866. ``lengths`` None weighs every
    completion once (per-sequence whitening, Bessel over N). Two differences from verl, both deliberate: a
    group of one gets 0 (verl keeps its raw reward), and a step of one token returns 0 (verl raises).
    Batch-level normalisation is also what DLER (004:L467) uses against length-penalty bias.
    """
    from trainer.distributed.context import all_ranks

    centred = rewards - group_mean(rewards, group_ids)  # [N]
    weights = centred.new_ones(centred.shape) if lengths is None else lengths.to(centred)  # [N]
    step_centred, step_weights = all_ranks(centred), all_ranks(weights)  # [N over every process]
    total = step_weights.sum()
    if float(total) < 2:
        return centred * 0.0
    mean = (step_weights * step_centred).sum() / total
    var = (step_weights * (step_centred - mean) ** 2).sum() / (total - 1)
    return (centred - mean) * (var + VERL_WHITEN_EPS).rsqrt()


def compute_advantages(
    rewards: Tensor,
    group_ids: Tensor,
    cfg: ChoosesAdvantage,
    lengths: Tensor | None = None,
    present: Tensor | None = None,
) -> Tensor:
    """Apply ``cfg.advantage_estimator`` with its params; ``lengths`` [N] are the completions' token counts.

    ``present`` [N] bool (None: all) leaves the other completions out of every statistic (``reward_absence``
    'drop': a sample whose reward source gave no score): the estimator runs on the present ones only, with their
    groups' remaining members, and the absent ones get advantage 0.
    """
    estimate, params = the_hook("advantage", cfg.advantage_estimator.active())
    if present is None or bool(present.all()):
        advantages: Tensor = estimate(rewards, group_ids, params, lengths)  # [N]
        return advantages
    out = rewards.new_zeros(rewards.shape)  # [N]
    kept = present.nonzero().squeeze(-1)  # [M]
    # called even with nothing kept: batch-wide estimators gather every process's values, so each must take part
    out[kept] = estimate(rewards[kept], group_ids[kept], params, None if lengths is None else lengths[kept])
    return out


@ADVANTAGES.check("rloo")
def _rloo_needs_groups(config: Any, params: Any) -> None:
    if config.rollout.num_generations < 2:
        raise ValueError(
            "advantage_estimator 'rloo' needs rollout.num_generations >= 2 (a leave-one-out baseline)"
        )
