"""Dual-clip, GAPO clip bounds and HISPO segment-level ratios, against hand-computed numbers."""

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.config.method_sections import chosen_methods
from trainer.errors import ConfigError
from trainer.methods import POLICY_LOSSES
from trainer.methods.axes import ActiveMethod
from trainer.methods.policy_losses import GAPOParams, LossExtras, gapo_clip_scale, prepare_loss_inputs

CFG = AlgorithmConfig(epsilon=0.2, epsilon_high=0.28)
DUAL = AlgorithmConfig(epsilon=0.2, epsilon_high=0.28, dual_clip=True, dual_clip_c=3.0)
ONE = torch.ones(1, 1)


def methods(cfg: AlgorithmConfig) -> list[ActiveMethod]:
    return [c.active() for c in chosen_methods(cfg)]


def one_token(ratio: float, adv: float, cfg: AlgorithmConfig, extras: LossExtras | None = None):  # type: ignore[no-untyped-def]
    logp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    out = POLICY_LOSSES.get("token")(logp, torch.zeros(1, 1), torch.tensor([[adv]]), ONE, cfg, extras)
    return logp, out


def test_dual_clip_caps_a_negative_advantage_token_at_c_times_abs_advantage() -> None:
    logp, out = one_token(5.0, -1.0, DUAL)  # plain PPO loss would be max(5 * 1, 1.28 * 1) = 5
    assert out.per_token_loss.item() == pytest.approx(3.0)
    assert out.clipped.all() and out.dual_clipped is not None and out.dual_clipped.all()
    out.per_token_loss.sum().backward()
    assert logp.grad is not None and logp.grad.item() == 0.0


def test_without_dual_clip_the_same_token_costs_the_full_ratio() -> None:
    _, out = one_token(5.0, -1.0, CFG)
    assert out.per_token_loss.item() == pytest.approx(5.0)
    assert out.dual_clipped is None and not out.clipped.any()


def test_dual_clip_leaves_a_ratio_below_c_alone() -> None:
    _, out = one_token(2.0, -1.0, DUAL)
    assert out.per_token_loss.item() == pytest.approx(2.0)
    assert not out.clipped.any()


def test_dual_clip_ignores_positive_advantages() -> None:
    _, out = one_token(5.0, 1.0, DUAL)  # upper clip 1.28 applies as usual
    assert out.per_token_loss.item() == pytest.approx(-1.28)
    assert out.clipped.all() and out.dual_clipped is not None and not out.dual_clipped.any()


def test_gapo_scale_is_abs_advantage_over_rms_of_nonzero_advantages() -> None:
    adv = torch.tensor([2.0, -0.5, 0.0, 1.0])
    rms = math.sqrt((4.0 + 0.25 + 1.0) / 3)  # zero advantages do not count
    scale = gapo_clip_scale(adv, GAPOParams())
    assert scale.tolist() == pytest.approx([2.0 / rms, 1.0, 1.0, 1.0])


def test_gapo_scale_is_capped_at_max_scale() -> None:
    adv = torch.tensor([2.0, -0.5, 0.0, 1.0])
    scale = gapo_clip_scale(adv, GAPOParams(max_scale=1.2))
    assert scale.tolist() == pytest.approx([1.2, 1.0, 1.0, 1.0])


def test_gapo_scale_of_an_all_zero_step_is_one() -> None:
    assert gapo_clip_scale(torch.zeros(3), GAPOParams()).tolist() == [1.0, 1.0, 1.0]


def test_gapo_rare_correct_answer_in_a_one_of_eight_group_gets_2_65x_headroom() -> None:
    # GRPO advantages of a G=8 group with one correct answer: (7/8) / std and -(1/8) / std, std = sqrt(1/8).
    std = math.sqrt(1 / 8)
    adv = torch.tensor([7 / 8 / std] + [-1 / 8 / std] * 7)
    scale = gapo_clip_scale(adv, GAPOParams())
    assert scale[0].item() == pytest.approx((7 / 8 / std) / math.sqrt(7 / 8), rel=1e-5)  # 2.6458
    assert scale[1:].tolist() == pytest.approx([1.0] * 7)


def test_gapo_widens_the_upper_bound_of_a_completion_by_its_scale() -> None:
    logp = torch.full((2, 1), math.log(1.5))
    extras = LossExtras(clip_scale=torch.tensor([2.0, 1.0]))  # row 0: upper bound 1 + 0.28 * 2 = 1.56
    out = POLICY_LOSSES.get("token")(logp, torch.zeros(2, 1), torch.ones(2, 1), torch.ones(2, 1), CFG, extras)
    assert out.per_token_loss[:, 0].tolist() == pytest.approx([-1.5, -1.28])
    assert out.clipped[:, 0].tolist() == [False, True]


def test_gapo_widens_the_lower_bound_of_a_negative_completion() -> None:
    extras = LossExtras(clip_scale=torch.tensor([2.0]))  # lower bound 1 - 0.2 * 2 = 0.6
    _, out = one_token(0.5, -1.0, CFG, extras)
    assert out.per_token_loss.item() == pytest.approx(0.6)
    assert out.clipped.all()


SEG_LOG_RATIO = torch.tensor([[0.1, 0.3, 0.2, 0.6, 9.0]])  # last column is padding
SEG_MASK = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]])
SEG_IDS = torch.tensor([[0, 0, 1, 1, 0]])


def test_segment_ratio_is_the_geometric_mean_of_its_tokens_and_clipped_per_segment() -> None:
    logp = SEG_LOG_RATIO.clone().requires_grad_(True)
    adv = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]])
    out = POLICY_LOSSES.get("segment")(
        logp, torch.zeros(1, 5), adv, SEG_MASK, CFG, LossExtras(segment_ids=SEG_IDS)
    )
    r0, r1 = math.exp(0.2), math.exp(0.4)  # mean log-ratio of segment 0 (0.1, 0.3) and segment 1 (0.2, 0.6)
    assert out.ratio[0, :4].tolist() == pytest.approx([r0, r0, r1, r1], rel=1e-6)
    assert out.per_token_loss[0, :4].tolist() == pytest.approx([-r0, -r0, -1.28, -1.28], rel=1e-6)
    assert out.clipped[0, :4].tolist() == [False, False, True, True]
    (out.per_token_loss * SEG_MASK).sum().backward()
    assert logp.grad is not None
    # d/dlogp_t of -2 exp(mean of segment 0) = -2 * r0 / 2 for both of its tokens; the clipped segment gets none.
    assert logp.grad[0].tolist() == pytest.approx([-r0, -r0, 0.0, 0.0, 0.0], rel=1e-6)


def test_one_segment_per_completion_equals_gspo() -> None:
    logp, old = torch.tensor([[0.1, -0.4, 0.3], [0.2, 0.5, 0.0]]), torch.zeros(2, 3)
    adv, mask = torch.tensor([[1.0] * 3, [-2.0] * 3]), torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    seg = POLICY_LOSSES.get("segment")(
        logp, old, adv, mask, CFG, LossExtras(segment_ids=torch.zeros(2, 3, dtype=torch.long))
    )
    seq = POLICY_LOSSES.get("sequence")(logp, old, adv, mask, CFG)
    assert torch.allclose(seg.per_token_loss * mask, seq.per_token_loss * mask)


def test_one_segment_per_token_equals_token_level() -> None:
    logp, old = torch.tensor([[0.1, -0.4, 0.3], [0.2, 0.5, -0.6]]), torch.zeros(2, 3)
    adv, mask = torch.tensor([[1.0] * 3, [-2.0] * 3]), torch.ones(2, 3)
    ids = torch.arange(3).repeat(2, 1)
    seg = POLICY_LOSSES.get("segment")(logp, old, adv, mask, DUAL, LossExtras(segment_ids=ids))
    tok = POLICY_LOSSES.get("token")(logp, old, adv, mask, DUAL)
    assert torch.allclose(seg.per_token_loss, tok.per_token_loss)
    assert torch.equal(seg.clipped, tok.clipped)


def test_segment_level_without_segment_ids_says_how_to_fix() -> None:
    with pytest.raises(ConfigError, match="segment ids"):
        POLICY_LOSSES.get("segment")(
            torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2), CFG
        )


def test_segment_gapo_and_dual_clip_compose() -> None:
    cfg = AlgorithmConfig(epsilon=0.2, epsilon_high=0.28, dual_clip=True, clip_mode="gapo")
    logp = torch.tensor([[math.log(4.0), math.log(4.0)], [math.log(1.5), math.log(1.5)]])
    adv = torch.tensor([[-1.0, -1.0], [1.0, 1.0]])
    extras = LossExtras(segment_ids=torch.zeros(2, 2, dtype=torch.long), clip_scale=torch.tensor([1.0, 2.0]))
    out = POLICY_LOSSES.get("segment")(logp, torch.zeros(2, 2), adv, torch.ones(2, 2), cfg, extras)
    # row 0: ratio 4 > c = 3 with A < 0 -> capped at 3; row 1: ratio 1.5 inside GAPO's widened 1.56 -> -1.5
    assert out.per_token_loss.flatten().tolist() == pytest.approx([3.0, 3.0, -1.5, -1.5])
    assert out.clipped.tolist() == [[True, True], [False, False]]


def test_existing_callers_without_extras_still_work() -> None:
    out = POLICY_LOSSES.get("token")(
        torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2), CFG
    )
    assert out.per_token_loss.tolist() == [[-1.0, -1.0]]


def test_prepare_loss_inputs_is_a_no_op_for_plain_ppo() -> None:
    adv, tok = torch.tensor([1.0, -1.0]), torch.tensor([[1.0, 1.0], [-1.0, 0.0]])
    inputs = prepare_loss_inputs(
        adv, tok, torch.rand(2, 2), torch.tensor([[1.0, 1.0], [1.0, 0.0]]), methods(CFG)
    )
    assert inputs.extras is None and inputs.segment_ids is None and inputs.metrics == {}
    assert torch.equal(inputs.token_advantages, tok)


def test_prepare_loss_inputs_applies_saliency_and_gapo() -> None:
    cfg = AlgorithmConfig(
        importance_sampling_level={"name": "segment", "params": {"min_tokens": 2, "boundary_quantile": 0.5}},
        clip_mode="gapo",
    )
    entropy = torch.tensor([[1.0, 1.0, 2.0, 2.0]])  # threshold = median 1.5: the third token opens segment 1
    mask = torch.ones(1, 4)
    inputs = prepare_loss_inputs(torch.tensor([1.0]), torch.ones(1, 4), entropy, mask, methods(cfg))
    assert inputs.segment_ids is not None and inputs.segment_ids.tolist() == [[0, 0, 1, 1]]
    low, high = 2 / (1 + math.e), 2 * math.e / (1 + math.e)  # exp(1), exp(2) rescaled to a mean of 1
    assert inputs.token_advantages[0].tolist() == pytest.approx([low, low, high, high], rel=1e-6)
    assert inputs.extras is not None and inputs.extras.clip_scale is not None
    assert inputs.metrics["segment/count_mean"] == 2.0 and inputs.metrics["actor/gapo_scale_max"] == 1.0
