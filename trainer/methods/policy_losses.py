"""Policy losses: the per-token surrogate objective (axis ``algorithm.importance_sampling_level``), and the
clip range (axis ``algorithm.clip_mode``).

Policy-loss hook (hook point ``policy_loss``): ``(logp [n, T], old_logp [n, T], adv [n, T], mask [n, T], algorithm,
extras=None) -> PolicyLossOutput``; ``algorithm`` is the algorithm section (its clip knobs: trainer/methods/views.py ClipSettings).
Methods that need more than the advantages add a ``loss_inputs`` hook ``(inputs: LossInputs, params) -> None``
that runs once per step before the update (HISPO's segments, GAPO's clip scales).
``extras`` (a ``LossExtras``, optional so older callers keep working) carries what the richer rules need:
per-token segment ids (HISPO) and a per-completion clip-range multiplier (GAPO). Aggregation over tokens
is a separate axis (aggregation.py), so GRPO, Dr. GRPO and DAPO are combinations of the same surrogate
with different normalisations.

Clip rules compose with every IS unit (token, sequence, segment): the unit decides which ratio is
clipped, ``clip_mode`` decides the range, ``dual_clip`` caps the loss of negative-advantage tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.errors import ConfigError
from trainer.methods.axes import ActiveMethod, Axis, hooks_at
from trainer.methods.segments import SegmentParams, entropy_segments, segment_metrics

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

    from trainer.methods.views import ClipSettings


@dataclass
class PolicyLossOutput:
    per_token_loss: Tensor  # [n, T]
    ratio: Tensor  # [n, T] or [n, 1]: the importance weight that was clipped
    clipped: Tensor  # [n, T] bool: a clip was active, either branch or dual-clip (for actor/clip_frac)
    dual_clipped: Tensor | None = None  # [n, T] bool: the dual-clip cap was active (None when off)


@dataclass
class LossExtras:
    """Optional inputs of the richer policy losses, aligned with the rows (and columns) of the batch."""

    segment_ids: Tensor | None = None  # [n, T] long: segment index of each token within its completion
    clip_scale: Tensor | None = None  # [n]: GAPO's per-completion clip-range multiplier s_i >= 1

    def select(self, rows: slice | Tensor, cols: slice) -> LossExtras:
        """The extras of a micro-batch (rows: a slice, or indices [K]) trimmed to its completion columns."""
        return LossExtras(
            segment_ids=None if self.segment_ids is None else self.segment_ids[rows, cols],
            clip_scale=None if self.clip_scale is None else self.clip_scale[rows],
        )


class PolicyLossFn(Protocol):
    def __call__(
        self,
        logp: Tensor,
        old_logp: Tensor,
        adv: Tensor,
        mask: Tensor,
        cfg: ClipSettings,
        extras: LossExtras | None = None,
    ) -> PolicyLossOutput: ...


POLICY_LOSSES: Axis[PolicyLossFn] = Axis(
    "policy loss",
    "algorithm.importance_sampling_level",
    "policy_loss",
    default="token",
    description="The unit of the importance ratio that is clipped: token (PPO), sequence (GSPO) or segment (HISPO).",
)
CLIP_RANGES: Axis[Any] = Axis(
    "clip range",
    "algorithm.clip_mode",
    "loss_inputs",
    default="fixed",
    description="The clip range of each completion: the same for all (PPO) or advantage-adaptive (GAPO).",
)


def _clipped_surrogate(
    log_ratio: Tensor, adv: Tensor, cfg: ClipSettings, clip_scale: Tensor | None = None
) -> PolicyLossOutput:
    """-min(rho A, clip(rho, 1 - eps_lo, 1 + eps_hi) A), optionally capped at c |A| for A < 0 (dual-clip).

    ``log_ratio`` is [n, T] or [n, 1]; ``clip_scale`` [n] multiplies both clip radii per completion (GAPO).
    """
    import torch

    ratio = torch.exp(log_ratio)
    if clip_scale is None:
        clipped_ratio = torch.clamp(ratio, 1.0 - cfg.epsilon, 1.0 + cfg.clip_high)
    else:
        scale = clip_scale[:, None].to(ratio.dtype)  # [n, 1]
        clipped_ratio = torch.minimum(
            torch.maximum(ratio, 1.0 - cfg.epsilon * scale), 1.0 + cfg.clip_high * scale
        )
    loss_unclipped = -ratio * adv
    loss_clipped = -clipped_ratio * adv
    per_token_loss = torch.maximum(loss_unclipped, loss_clipped)  # [n, T]
    clipped = (loss_clipped > loss_unclipped).expand_as(adv)
    dual_clipped = None
    if cfg.dual_clip:
        # Ye et al. 2020: for A < 0 the objective is max(min(rho A, clip(rho) A), c A), i.e. loss <= c |A|.
        cap = -cfg.dual_clip_c * adv  # [n, T]
        dual_clipped = (adv < 0) & (per_token_loss > cap)
        per_token_loss = torch.where(dual_clipped, cap, per_token_loss)
        clipped = clipped | dual_clipped
    return PolicyLossOutput(
        per_token_loss=per_token_loss, ratio=ratio, clipped=clipped, dual_clipped=dual_clipped
    )


def _token_credit_log_ratio(log_unit_ratio: Tensor, logp: Tensor, mask: Tensor) -> Tensor:
    """GSPO-token's per-token log ratio sg[log s_u] + (logp_t - sg[logp_t]) * mask_t, [n, T].

    ``log_unit_ratio`` is the log ratio of each token's IS unit (completion [n, 1] or segment [n, T]). The
    value is log s_u exactly (logp - sg[logp] is 0.0); the gradient is 1 per loss token, 0 per masked token.
    """
    return log_unit_ratio.detach() + (logp - logp.detach()) * mask


@POLICY_LOSSES.method("token")
def ppo_clip_token(
    logp: Tensor,
    old_logp: Tensor,
    adv: Tensor,
    mask: Tensor,
    cfg: ClipSettings,
    extras: LossExtras | None = None,
) -> PolicyLossOutput:
    """PPO clipped surrogate per token (Schulman et al. 2017), with clip-higher (DAPO, Yu et al. 2025).

    -min(rho_t A_t, clip(rho_t, 1 - epsilon, 1 + epsilon_high) A_t), rho_t = pi(y_t) / pi_old(y_t)."""
    return _clipped_surrogate(logp - old_logp, adv, cfg, extras.clip_scale if extras else None)


@POLICY_LOSSES.method("sequence")
def gspo_sequence(
    logp: Tensor,
    old_logp: Tensor,
    adv: Tensor,
    mask: Tensor,
    cfg: ClipSettings,
    extras: LossExtras | None = None,
) -> PolicyLossOutput:
    """GSPO (Zheng et al. 2025): one length-normalised ratio per completion, in the paper's GSPO-token form
    so per-token advantages keep their credit.

    The sequence ratio is the length-normalised (geometric-mean) one over the completion's loss tokens,
    s_i = exp(mean_{t: mask=1} (logp_t - old_logp_t)). The paper's GSPO-token objective (its section
    "GSPO-token") gives every token the ratio

        s_{i,t} = sg[s_i] * pi(y_t) / sg[pi(y_t)]   (sg = stop-gradient)

    and clips min(s_{i,t} A_{i,t}, clip(s_{i,t}) A_{i,t}) with the token's own advantage A_{i,t}. Its value is
    s_i for every token (so the clip decision is the sequence's, as in GSPO), but d s_{i,t} / d logp_t = s_i:
    each token's gradient is scaled by its own advantage. Plain GSPO applies d s_i / d logp_t = s_i / |y_i|
    to the sum of the sequence's advantages, which cancels per-token credit (teacher fusion, ECR,
    top-entropy): advantages [1, -1] gave gradient [0, 0]. When all of a completion's advantages are equal
    the two coincide, values and gradients, for every loss_type (each weighs a completion's tokens
    equally). The pi / sg[pi] factor is multiplied by the loss mask, so masked tokens get no gradient from
    the surrogate at all, whatever their advantage. ``ratio`` reports s_i, [n, 1]. Equals TRL's
    importance_sampling_level='sequence' for sequence-level advantages.
    """
    import torch

    log_seq_ratio = ((logp - old_logp) * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # [n]
    log_token_ratio = _token_credit_log_ratio(log_seq_ratio[:, None], logp, mask)  # [n, T]
    out = _clipped_surrogate(log_token_ratio, adv, cfg, extras.clip_scale if extras else None)
    out.ratio = torch.exp(log_seq_ratio.detach())[:, None]  # [n, 1]
    return out


@POLICY_LOSSES.method("segment", params=SegmentParams)
def hispo_segment(
    logp: Tensor,
    old_logp: Tensor,
    adv: Tensor,
    mask: Tensor,
    cfg: ClipSettings,
    extras: LossExtras | None = None,
) -> PolicyLossOutput:
    """HISPO: one length-normalised ratio per entropy-derived segment, with a soft entropy saliency weight.

    The ratio of a segment is the geometric mean over its loss tokens, s_seg = exp(mean_{t in seg: mask=1}
    log rho_t) (source: shared/seeds 001:L13):
    GSPO's rule applied to a segment instead of the whole completion, in GSPO-token's per-token form
    (Zheng et al. 2025, section "GSPO-token"; see ``gspo_sequence``). Each token gets the ratio

        s_{seg,t} = sg[s_seg] * pi(y_t) / sg[pi(y_t)]   (log: sg[log s_seg] + (logp_t - sg[logp_t]) * mask_t)

    and the clip uses the token's own advantage A_t. The value is s_seg for every token of the segment (the
    segment's clip decision, as in HISPO), but d s_{seg,t} / d logp_t = s_seg, so per-token credit inside a
    segment (saliency, OPD / fusion / ECR / top-entropy credit) keeps its sign: with the plain segment ratio
    every token got s_seg / |seg| times the segment's summed advantage, so advantages [1, -1] in one segment
    gave gradient [0, 0]. Masked tokens get no gradient from the surrogate, whatever their advantage. When a
    segment's advantages are equal the two forms coincide, values and gradients, for every loss_type (each
    weighs a completion's tokens equally). ``ratio`` reports s_seg per token, [n, T], without gradient.

    How it differs from the paper: the abstract gives neither the boundary rule nor the saliency form. Here
    segments come from trainer/methods/segments.py (a new segment at a high-entropy token, with a
    minimum length) and the soft saliency weight is folded into the per-token advantage before the loss
    (w > 0, so w * surrogate(A) == surrogate(w * A), dual-clip included), which lets the dashboard show it.
    """
    import torch

    if extras is None or extras.segment_ids is None:
        raise ConfigError(
            "importance_sampling_level 'segment' needs per-token segment ids (LossExtras.segment_ids); "
            "build them with trainer.methods.segments.entropy_segments at rollout time"
        )
    seg = extras.segment_ids.long()  # [n, T]
    n = seg.shape[0]
    num_seg = int(seg.max()) + 1 if seg.numel() else 1
    flat = (torch.arange(n, device=seg.device)[:, None] * num_seg + seg).reshape(
        -1
    )  # [n*T] global segment index
    masked_log_ratio = ((logp - old_logp) * mask).reshape(-1)  # [n*T]
    sums = torch.zeros(n * num_seg, dtype=logp.dtype, device=logp.device).index_add(0, flat, masked_log_ratio)
    counts = torch.zeros(n * num_seg, dtype=logp.dtype, device=logp.device).index_add(
        0, flat, mask.reshape(-1).to(logp.dtype)
    )
    seg_log_ratio = (sums / counts.clamp(min=1.0))[flat].reshape(seg.shape)  # [n, T]: log s_seg of each token
    out = _clipped_surrogate(_token_credit_log_ratio(seg_log_ratio, logp, mask), adv, cfg, extras.clip_scale)
    out.ratio = torch.exp(seg_log_ratio.detach())  # [n, T]
    return out


class GAPOParams(BoundedModel):
    max_scale: float = Field(
        3.0,
        ge=1,
        le=100,
        description="A completion's clip range is epsilon x s (lower) and epsilon_high x s (upper) with s = "
        "clamp(|A_i| / rms(A), 1, max_scale), rms over the step's non-zero advantages. The GAPO abstract gives no "
        "formula; this one widens the range in proportion to the learning signal.",
    )


def gapo_clip_scale(advantages: Tensor, params: GAPOParams) -> Tensor:
    """GAPO per-completion clip-range multiplier s_i = clamp(|A_i| / rms, 1, s_max) (shared/seeds 001:L49).

    ``rms`` is the root mean square of the step's non-zero scalar advantages, so s is unit-free (the same for
    grpo, dr_grpo, rloo). The abstract gives no formula, only "rollouts with larger learning signal should
    receive proportionally greater update headroom" under a reverse-KL trust region: the clip radius grows in
    proportion to |A| once |A| exceeds the step's typical magnitude, and never shrinks below PPO's. With GRPO's
    std scaling, in a step of G=8 groups with one correct answer each, the correct answers get |A| = 2.47 =
    2.65 rms (a 2.65x wider range) and the wrong ones |A| = 0.35 (fixed range). Capped at gapo_max_scale.
    In a data-parallel run the rms is over every process's advantages (``all_ranks``), as in one process.
    """
    from trainer.distributed.context import all_ranks

    step_advantages = all_ranks(advantages)  # [N over every process]
    nonzero = step_advantages[step_advantages != 0]
    if nonzero.numel() == 0:
        return advantages.new_ones(advantages.shape)
    rms = nonzero.pow(2).mean().sqrt()
    return (advantages.abs() / rms).clamp(min=1.0, max=params.max_scale)  # [N]


@dataclass
class LossInputs:
    """What the training step hands the update beyond the plain per-token advantages; ``loss_inputs`` hooks
    fill it in place."""

    advantages: Tensor  # [N] scalar advantages (GAPO reads them)
    token_advantages: (
        Tensor  # [N, T] per-token advantages after token credit (HISPO multiplies its saliency in)
    )
    entropy: Tensor  # [N, T] sampling-time entropies (HISPO cuts segments at them)
    loss_mask: Tensor  # [N, T]
    extras: LossExtras | None = None  # None for plain token / sequence PPO
    segment_ids: Tensor | None = None  # [N, T] for the dashboard's 'segment' channel
    metrics: dict[str, float] = field(default_factory=dict)  # segment/* and actor/gapo_* metrics

    def extra(self) -> LossExtras:
        if self.extras is None:
            self.extras = LossExtras()
        return self.extras


def prepare_loss_inputs(
    advantages: Tensor,
    token_advantages: Tensor,
    entropy: Tensor,
    loss_mask: Tensor,
    methods: Sequence[ActiveMethod],
    step: int | None = None,
) -> LossInputs:
    """Run the ``loss_inputs`` hook of every chosen method that acts at ``step``, in config order.

    ``advantages`` [N] are the scalar ones, ``token_advantages`` [N, T] the output of token credit,
    ``entropy`` [N, T] the sampling-time entropies; ``step`` None: outside a training step (every method acts).
    """
    inputs = LossInputs(advantages, token_advantages, entropy, loss_mask)
    for hook, params in hooks_at("loss_inputs", methods, step):
        hook(inputs, params)
    return inputs


@POLICY_LOSSES.method("segment", point="loss_inputs")
def hispo_segments(inputs: LossInputs, params: SegmentParams) -> None:
    """HISPO's segments and saliency: the segment ids go to the loss, the saliency into the token advantages."""
    segments = entropy_segments(inputs.entropy, inputs.loss_mask, params)
    inputs.token_advantages = inputs.token_advantages * segments.saliency  # [N, T]
    inputs.metrics.update(segment_metrics(segments, inputs.loss_mask))
    inputs.extra().segment_ids = segments.ids
    inputs.segment_ids = segments.ids


@POLICY_LOSSES.check("segment")
def _segments_fit(config: Any, params: SegmentParams) -> None:
    max_len = config.rollout.max_completion_length
    if params.min_tokens >= max_len:
        raise ValueError(
            f"algorithm.importance_sampling_level 'segment': min_tokens ({params.min_tokens}) >= "
            f"rollout.max_completion_length ({max_len}): every completion would be one segment; use 'sequence' "
            "(GSPO) or lower min_tokens"
        )


@CLIP_RANGES.method("fixed")
def fixed_clip_range(inputs: LossInputs, params: Any) -> None:
    """The same clip range [1 - epsilon, 1 + epsilon_high] for every completion (PPO)."""


@CLIP_RANGES.method("gapo", params=GAPOParams)
def gapo_clip_range(inputs: LossInputs, params: GAPOParams) -> None:
    """GAPO: an advantage-adaptive clip range per completion, wider where |advantage| is large relative to the
    step (rare correct answers in low-success groups)."""
    scale = gapo_clip_scale(inputs.advantages, params)
    inputs.extra().clip_scale = scale
    inputs.metrics["actor/gapo_scale_mean"] = float(scale.mean())
    inputs.metrics["actor/gapo_scale_max"] = float(scale.max())


@CLIP_RANGES.check("gapo")
def _gapo_lower_bound_positive(config: Any, params: GAPOParams) -> None:
    eps = config.algorithm.epsilon
    if eps * params.max_scale >= 1:
        raise ValueError(
            f"algorithm.epsilon x clip_mode gapo's max_scale = {eps * params.max_scale:g} >= 1 would let GAPO's "
            "lower clip bound 1 - epsilon x s reach 0: lower max_scale or epsilon"
        )
