"""HISPO's segment ratio in GSPO-token form: per-token credit survives inside a segment.

The plain segment ratio s_seg = exp(mean_{t in seg} log rho_t) has the same gradient s_seg / |seg| for every
token of the segment, so each token got s_seg / |seg| * (sum of the segment's advantages): credit that
differs within a segment (saliency, OPD / fusion / ECR / top-entropy credit) cancelled. Each token's ratio is
now sg[s_seg] * pi_t / sg[pi_t]: value s_seg, gradient s_seg times the token's own advantage.
"""

import math

import pytest
import torch

from tests.trainer.algorithms.loss_helpers import CFG, DUAL, ctx
from trainer.config import AlgorithmConfig
from trainer.methods import AGGREGATIONS, POLICY_LOSSES
from trainer.methods.policy_losses import LossExtras


def plain_segment_loss(
    logp: torch.Tensor,
    old: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    ids: torch.Tensor,
    cfg: AlgorithmConfig,
    scale: torch.Tensor | None = None,
) -> torch.Tensor:
    """The previous segment loss, written out: s_seg = exp(mean of the segment's loss-token log ratios) on
    every token of the segment, -min(s A, clip(s) A), capped at c |A| for A < 0 (dual-clip)."""
    member = (ids[..., None] == torch.arange(int(ids.max()) + 1)) & mask.bool()[..., None]  # [n, T, S]
    seg_mean = ((logp - old)[..., None] * member).sum(1) / member.sum(1).clamp(min=1)  # [n, S]
    s = torch.exp(seg_mean).gather(1, ids)  # [n, T]
    sc = torch.ones(ids.shape[0]) if scale is None else scale
    clipped = torch.minimum(torch.maximum(s, 1 - cfg.epsilon * sc[:, None]), 1 + cfg.clip_high * sc[:, None])
    loss = torch.maximum(-s * adv, -clipped * adv)
    if cfg.dual_clip:
        loss = torch.where(adv < 0, torch.minimum(loss, -cfg.dual_clip_c * adv), loss)
    return loss


def test_opposite_advantages_inside_one_segment_give_opposite_gradients() -> None:
    # One segment of two tokens, log-ratios 0.2 and -0.1: s_seg = exp(0.05) = 1.051271 (inside [0.8, 1.28]),
    # A = [1, -1]. GSPO-token form: d s_{seg,t} / d logp_t = s_seg, and 'dapo' divides by the 2 tokens, so
    # d loss / d logp = [-s_seg * 1 / 2, -s_seg * (-1) / 2] = [-0.525636, +0.525636].
    # Previous form: d s_seg / d logp_t = s_seg / 2 for both, each got -(s_seg / 2) * (1 + (-1)) / 2 = 0: [0, 0].
    logp = torch.tensor([[0.2, -0.1]], requires_grad=True)
    old, adv, mask = torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), torch.ones(1, 2)
    extras = LossExtras(segment_ids=torch.zeros(1, 2, dtype=torch.long))
    out = POLICY_LOSSES.get("segment")(logp, old, adv, mask, CFG, extras)
    AGGREGATIONS.get("dapo")(out.per_token_loss, mask, ctx(mask)).backward()
    s = math.exp(0.05)
    assert logp.grad is not None
    assert logp.grad[0].tolist() == pytest.approx([-s / 2, s / 2], rel=1e-6)


def test_a_masked_token_gets_no_gradient_and_its_advantage_does_not_leak_into_its_segment() -> None:
    # The third token is masked but shares segment 0; its advantage 5.0 must not reach the two loss tokens,
    # even before the aggregation multiplies by the mask (previously each got -(s / 2) * 5 = -2.628).
    logp = torch.tensor([[0.2, -0.1, 0.7]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    extras = LossExtras(segment_ids=torch.zeros(1, 3, dtype=torch.long))
    out = POLICY_LOSSES.get("segment")(
        logp, torch.zeros(1, 3), torch.tensor([[1.0, -1.0, 5.0]]), mask, CFG, extras
    )
    out.per_token_loss.sum().backward()
    s = math.exp(0.05)
    assert logp.grad is not None
    assert logp.grad[0].tolist() == pytest.approx([-s, s, 0.0], rel=1e-6)


def test_each_segment_of_a_completion_keeps_its_own_ratio_and_clip() -> None:
    # Segments (0.1, 0.3), (0.2, 0.6), (-0.1, -0.3): s = exp(0.2) = 1.2214, exp(0.4) = 1.4918 (above 1.28),
    # exp(-0.2) = 0.8187. In segment 1, A = 1 is clipped (no gradient) but A = -0.5 is not (the unclipped
    # branch is the larger loss), so each token of a segment follows its own advantage's clip branch.
    logp = torch.tensor([[0.1, 0.3, 0.2, 0.6, -0.1, -0.3]], requires_grad=True)
    adv = torch.tensor([[2.0, -1.0, 1.0, -0.5, -1.0, 3.0]])
    ids, mask = torch.tensor([[0, 0, 1, 1, 2, 2]]), torch.ones(1, 6)
    out = POLICY_LOSSES.get("segment")(logp, torch.zeros(1, 6), adv, mask, CFG, LossExtras(segment_ids=ids))
    r0, r1, r2 = math.exp(0.2), math.exp(0.4), math.exp(-0.2)
    assert out.ratio[0].tolist() == pytest.approx([r0, r0, r1, r1, r2, r2], rel=1e-6)
    assert out.per_token_loss[0].tolist() == pytest.approx(
        [-2 * r0, r0, -1.28, 0.5 * r1, r2, -3 * r2], rel=1e-6
    )
    assert out.clipped[0].tolist() == [False, False, True, False, False, False]
    out.per_token_loss.sum().backward()
    assert logp.grad is not None
    assert logp.grad[0].tolist() == pytest.approx([-2 * r0, r0, 0.0, 0.5 * r1, r2, -3 * r2], rel=1e-6)


# Three completions, advantages uniform within each segment (as with sequence advantages times saliency):
# row 0: segment 0 inside the range, segment 1 clipped high (A > 0), padding with a junk log-prob;
# row 1: segment 0 clipped low (A < 0), segment 1 around a masked junk token, segment 2 = one token whose
#        ratio 4.95 trips the dual-clip cap (A < 0); row 2: one segment, inside the range.
UNIFORM_LOGP = torch.tensor(
    [
        [0.1, -0.2, 0.3, 0.5, 0.4, 9.0],
        [-0.6, -0.3, 0.1, 9.0, 0.2, 1.6],
        [0.05, -0.1, 0.0, 0.1, -0.05, 0.2],
    ]
)
UNIFORM_IDS = torch.tensor([[0, 0, 0, 1, 1, 0], [0, 0, 1, 1, 1, 2], [0, 0, 0, 0, 0, 0]])
UNIFORM_MASK = torch.tensor([[1.0, 1, 1, 1, 1, 0], [1, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 1]])
UNIFORM_ADV = torch.tensor(
    [
        [1.5, 1.5, 1.5, 0.7, 0.7, 0.0],
        [-1.2, -1.2, 0.9, 0.9, 0.9, -0.4],
        [0.3, 0.3, 0.3, 0.3, 0.3, 0.3],
    ]
)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("cfg", [CFG, DUAL], ids=["clip", "dual_clip"])
def test_uniform_advantages_within_segments_reduce_exactly_to_the_plain_segment_ratio(
    loss_type: str, cfg: AlgorithmConfig
) -> None:
    old = torch.zeros_like(UNIFORM_LOGP)
    token_logp, ref_logp = UNIFORM_LOGP.clone().requires_grad_(), UNIFORM_LOGP.clone().requires_grad_()
    out = POLICY_LOSSES.get("segment")(
        token_logp, old, UNIFORM_ADV, UNIFORM_MASK, cfg, LossExtras(segment_ids=UNIFORM_IDS)
    )
    ref = plain_segment_loss(ref_logp, old, UNIFORM_ADV, UNIFORM_MASK, UNIFORM_IDS, cfg)
    assert torch.allclose(out.per_token_loss * UNIFORM_MASK, ref * UNIFORM_MASK, rtol=0, atol=1e-7)
    aggregate = AGGREGATIONS.get(loss_type)
    aggregate(out.per_token_loss, UNIFORM_MASK, ctx(UNIFORM_MASK)).backward()
    aggregate(ref, UNIFORM_MASK, ctx(UNIFORM_MASK)).backward()
    assert token_logp.grad is not None and ref_logp.grad is not None
    assert torch.allclose(token_logp.grad, ref_logp.grad, rtol=1e-6, atol=1e-8)
    assert (token_logp.grad[0, :3] != 0).all() and (token_logp.grad[2] != 0).all()  # unclipped segments train
    assert (token_logp.grad[0, 3:] == 0).all()  # the clipped-high segment does not


def test_uniform_advantages_within_segments_match_the_plain_segment_ratio_with_gapo_clip_scale() -> None:
    # Row 0's segments have ratios exp(0.35) = 1.42 and exp(0.15); scale 2 widens its range to [0.6, 1.56].
    logp0, old = torch.tensor([[0.4, 0.3, 0.1, 0.2], [0.5, 0.4, 0.1, 0.0]]), torch.zeros(2, 4)
    adv, mask = torch.tensor([[2.0, 2.0, -1.0, -1.0], [1.0, 1.0, 0.5, 0.5]]), torch.ones(2, 4)
    ids, scale = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1]]), torch.tensor([2.0, 1.0])
    token_logp, ref_logp = logp0.clone().requires_grad_(), logp0.clone().requires_grad_()
    extras = LossExtras(segment_ids=ids, clip_scale=scale)
    out = POLICY_LOSSES.get("segment")(token_logp, old, adv, mask, CFG, extras)
    ref = plain_segment_loss(ref_logp, old, adv, mask, ids, CFG, scale)
    assert torch.allclose(out.per_token_loss, ref, rtol=0, atol=1e-7)
    out.per_token_loss.sum().backward()
    ref.sum().backward()
    assert token_logp.grad is not None and ref_logp.grad is not None
    assert torch.allclose(token_logp.grad, ref_logp.grad, rtol=1e-6)
    assert (token_logp.grad[0] != 0).all()  # the widened range keeps row 0's 1.42 unclipped
