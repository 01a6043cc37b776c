"""GSPO with per-token advantages follows the paper's GSPO-token: per-token credit survives the sequence ratio.

Plain GSPO, applied to per-token advantages, averaged the credit away: its ratio s_i has the same gradient
s_i / |y_i| for every token, so a completion's gradient was s_i / |y_i| * sum_t A_t on each token.
"""

import math

import pytest
import torch

from tests.trainer.algorithms.loss_helpers import CFG, DUAL, ctx
from trainer.config import AlgorithmConfig
from trainer.methods import AGGREGATIONS, POLICY_LOSSES
from trainer.methods.policy_losses import LossExtras


def plain_gspo_loss(
    logp: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, cfg: AlgorithmConfig
) -> torch.Tensor:
    """Reference GSPO (sequence advantages), written out: -min(s A, clip(s) A), capped at c |A| (dual-clip)."""
    s = torch.exp(((logp - old) * mask).sum(-1) / mask.sum(-1))[:, None]  # [n, 1]
    loss = torch.maximum(-s * adv, -torch.clamp(s, 1 - cfg.epsilon, 1 + cfg.clip_high) * adv)
    if cfg.dual_clip:
        loss = torch.where(adv < 0, torch.minimum(loss, -cfg.dual_clip_c * adv), loss)
    return loss


def test_opposite_token_advantages_give_opposite_gradients() -> None:
    # Two tokens, log-ratios 0.2 and -0.1, so s = exp(0.05) = 1.051271 (inside [0.8, 1.28]: no clip), A = [1, -1].
    # GSPO-token: loss_t = -s_t A_t with s_t = sg[s] pi_t / sg[pi_t], d s_t / d logp_t = s. 'dapo' divides the
    # sum by the 2 tokens, so d loss / d logp = [-s * 1 / 2, -s * (-1) / 2] = [-0.525636, +0.525636].
    # Plain GSPO: d s / d logp_t = s / 2 for both, so each gets -(s / 2) * (1 + (-1)) / 2 = 0: [0, 0].
    logp = torch.tensor([[0.2, -0.1]], requires_grad=True)
    old, adv, mask = torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), torch.ones(1, 2)
    out = POLICY_LOSSES.get("sequence")(logp, old, adv, mask, CFG)
    AGGREGATIONS.get("dapo")(out.per_token_loss, mask, ctx(mask)).backward()
    s = math.exp(0.05)
    assert logp.grad is not None
    assert logp.grad[0].tolist() == pytest.approx([-s / 2, s / 2], rel=1e-6)


def test_every_token_carries_the_sequence_ratio_as_its_value() -> None:
    logp, old = torch.tensor([[0.2, -0.1, 7.0]]), torch.zeros(1, 3)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = POLICY_LOSSES.get("sequence")(logp, old, torch.tensor([[1.0, -1.0, 0.0]]), mask, CFG)
    s = math.exp(0.05)
    assert out.ratio.shape == (1, 1) and out.ratio.item() == pytest.approx(s, rel=1e-6)
    assert out.per_token_loss[0, :2].tolist() == pytest.approx([-s, s], rel=1e-6)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("cfg", [CFG, DUAL], ids=["clip", "dual_clip"])
def test_uniform_advantages_reduce_exactly_to_plain_gspo(loss_type: str, cfg: AlgorithmConfig) -> None:
    # Four completions: one inside the clip range, one clipped high (A > 0), one clipped low (A < 0), and one
    # whose ratio 5.0 trips the dual-clip cap; lengths differ, padding holds junk log-probs.
    logp0 = torch.tensor(
        [[0.1, -0.2, 0.3, 9.0], [0.5, 0.4, 9.0, 9.0], [-0.6, -0.3, -0.5, 9.0], [1.6, 1.6, 1.6, 1.6]]
    )
    old, mask = torch.zeros(4, 4), torch.tensor([[1.0, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    adv = torch.tensor([[1.5], [0.7], [-1.2], [-0.4]]).expand(4, 4).clone()
    token_logp, ref_logp = logp0.clone().requires_grad_(), logp0.clone().requires_grad_()
    out = POLICY_LOSSES.get("sequence")(token_logp, old, adv, mask, cfg)
    ref = plain_gspo_loss(ref_logp, old, adv, mask, cfg)
    assert torch.allclose(out.per_token_loss * mask, ref * mask, rtol=0, atol=1e-7)
    aggregate = AGGREGATIONS.get(loss_type)
    aggregate(out.per_token_loss, mask, ctx(mask)).backward()
    aggregate(ref, mask, ctx(mask)).backward()
    assert token_logp.grad is not None and ref_logp.grad is not None
    assert torch.allclose(token_logp.grad, ref_logp.grad, rtol=1e-6, atol=1e-8)
    assert (token_logp.grad[0, :3] != 0).all()  # the unclipped completion does train


def test_uniform_advantages_match_plain_gspo_with_gapo_clip_scale() -> None:
    logp0, old = torch.tensor([[0.4, 0.3], [0.1, 0.2]]), torch.zeros(2, 2)
    adv, mask = torch.tensor([[2.0, 2.0], [1.0, 1.0]]), torch.ones(2, 2)
    token_logp, ref_logp = logp0.clone().requires_grad_(), logp0.clone().requires_grad_()
    scale = torch.tensor(
        [2.0, 1.0]
    )  # the first completion's range widens to 1.56, so exp(0.35) = 1.42 is not clipped
    out = POLICY_LOSSES.get("sequence")(token_logp, old, adv, mask, CFG, LossExtras(clip_scale=scale))
    out.per_token_loss.sum().backward()
    s = torch.exp((ref_logp - old).mean(-1, keepdim=True))
    (-s * adv).sum().backward()
    assert token_logp.grad is not None and ref_logp.grad is not None
    assert torch.allclose(token_logp.grad, ref_logp.grad, rtol=1e-6)


def test_a_masked_token_gets_no_gradient_and_its_advantage_does_not_leak() -> None:
    # The third token is masked (truncated / answer span); its advantage 5.0 must not reach the real tokens,
    # even before the aggregation multiplies by the mask.
    logp = torch.tensor([[0.2, -0.1, 0.7]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = POLICY_LOSSES.get("sequence")(logp, torch.zeros(1, 3), torch.tensor([[1.0, -1.0, 5.0]]), mask, CFG)
    out.per_token_loss.sum().backward()
    s = math.exp(0.05)
    assert logp.grad is not None
    assert logp.grad[0].tolist() == pytest.approx([-s, s, 0.0], rel=1e-6)
