"""Hand-computed advantages for every estimator, including a group of equal rewards."""

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.methods import ADVANTAGES, compute_advantages

# Two groups of four: group 0 has rewards 1,0,0,1 (mean .5, unbiased std sqrt(1/3)); group 1 all equal.
REWARDS = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5])
GROUPS = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
STD0 = math.sqrt(1 / 3)


def cfg(**kw: object) -> AlgorithmConfig:
    return AlgorithmConfig(**kw)  # type: ignore[arg-type]


def test_grpo_divides_by_the_group_std_and_zeroes_equal_groups() -> None:
    adv = compute_advantages(REWARDS, GROUPS, cfg())
    expected = [0.5 / (STD0 + 1e-4), -0.5 / (STD0 + 1e-4)] * 1
    assert adv[0].item() == pytest.approx(expected[0], rel=1e-6)
    assert adv[1].item() == pytest.approx(expected[1], rel=1e-6)
    assert torch.all(adv[4:] == 0)


def test_grpo_batch_scaling_uses_the_std_of_the_whole_step() -> None:
    adv = compute_advantages(REWARDS, GROUPS, cfg(scale_rewards="batch"))
    batch_std = REWARDS.std().item()  # unbiased over 8 values
    assert adv[0].item() == pytest.approx(0.5 / (batch_std + 1e-4), rel=1e-6)


def test_grpo_without_scaling_only_centres() -> None:
    adv = compute_advantages(REWARDS, GROUPS, cfg(scale_rewards="none"))
    assert adv.tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0])


def test_dr_grpo_equals_centred_rewards() -> None:
    adv = compute_advantages(REWARDS, GROUPS, cfg(advantage_estimator="dr_grpo"))
    assert adv.tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0])


def test_rloo_subtracts_the_mean_of_the_other_completions() -> None:
    adv = compute_advantages(REWARDS, GROUPS, cfg(advantage_estimator="rloo"))
    # r0 = 1, others 0,0,1 -> mean 1/3 -> 2/3 ; r1 = 0, others 1,0,1 -> -2/3
    assert adv[:4].tolist() == pytest.approx([2 / 3, -2 / 3, -2 / 3, 2 / 3])
    assert adv[4:].tolist() == pytest.approx([0, 0, 0, 0])


def test_rloo_matches_a_loop_reference_on_random_uneven_groups() -> None:
    g = torch.Generator().manual_seed(0)
    rewards = torch.rand(11, generator=g)
    groups = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3])
    adv = compute_advantages(rewards, groups, cfg(advantage_estimator="rloo"))
    for i in range(11):
        others = [rewards[j] for j in range(11) if groups[j] == groups[i] and j != i]
        assert adv[i].item() == pytest.approx((rewards[i] - sum(others) / len(others)).item(), abs=1e-6)


def test_rloo_gives_zero_to_a_group_of_one() -> None:
    adv = compute_advantages(
        torch.tensor([1.0, 0.3, 0.7]), torch.tensor([0, 1, 1]), cfg(advantage_estimator="rloo")
    )
    assert adv[0].item() == 0.0


def test_reinforce_pp_whitens_group_centred_rewards_over_the_batch() -> None:
    adv = compute_advantages(
        REWARDS, GROUPS, cfg(advantage_estimator="reinforce_pp")
    )  # no lengths: weight 1 each
    centred = torch.tensor([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0])
    expected = (centred - centred.mean()) / (centred.var() + 1e-8).sqrt()  # verl's masked_whiten
    assert adv.tolist() == pytest.approx(expected.tolist(), rel=1e-6)
    assert adv.mean().item() == pytest.approx(0.0, abs=1e-6)


def test_grpo_matches_a_loop_reference_on_random_groups() -> None:
    g = torch.Generator().manual_seed(1)
    rewards = torch.rand(24, generator=g)
    groups = torch.arange(6).repeat_interleave(4)
    adv = compute_advantages(rewards, groups, cfg())
    ref = rewards.view(6, 4)
    ref = (ref - ref.mean(1, keepdim=True)) / (ref.std(1, keepdim=True) + 1e-4)
    assert torch.allclose(adv, ref.flatten(), atol=1e-6)


def test_unknown_estimator_lists_the_valid_names() -> None:
    from trainer.errors import ConfigError

    with pytest.raises(ConfigError, match=r"valid names are: .*grpo.*rloo"):
        ADVANTAGES.get("ppo_gae")
