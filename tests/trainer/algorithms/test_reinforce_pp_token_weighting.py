"""reinforce_pp whitens token-weighted, as verl's reinforce_plus_plus_baseline (masked_whiten over [B, T])."""

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.methods import compute_advantages

RPP = AlgorithmConfig(advantage_estimator="reinforce_pp")
# Two groups of two, rewards [1, 0 | 1, 0]: group-centred x = [0.5, -0.5, 0.5, -0.5].
REWARDS, GROUPS = torch.tensor([1.0, 0.0, 1.0, 0.0]), torch.tensor([0, 0, 1, 1])
LENGTHS = torch.tensor([1, 3, 2, 2])


def test_reinforce_pp_weighs_each_completion_by_its_tokens_as_verl_does() -> None:
    # Tokens: 1 x 0.5, 3 x -0.5, 2 x 0.5, 2 x -0.5 (8 tokens). Mean m = (0.5 - 1.5 + 1 - 1) / 8 = -0.125.
    # Deviations 0.625 (3 tokens) and -0.375 (5 tokens): sum of squares 3 * 0.390625 + 5 * 0.140625 = 1.875.
    # verl's masked_var is unbiased: v = 1.875 / 7 = 0.267857, sqrt(v + 1e-8) = 0.517549.
    # A = 0.625 / 0.517549 = +1.2076 for the correct answers, -0.375 / 0.517549 = -0.7246 for the wrong ones.
    adv = compute_advantages(REWARDS, GROUPS, RPP, LENGTHS)
    sd = math.sqrt(1.875 / 7 + 1e-8)
    assert adv.tolist() == pytest.approx([0.625 / sd, -0.375 / sd, 0.625 / sd, -0.375 / sd], rel=1e-6)
    assert adv.tolist() == pytest.approx([1.2076, -0.7246, 1.2076, -0.7246], abs=1e-4)


def test_reinforce_pp_matches_a_masked_whiten_over_the_response_tokens() -> None:
    # The same quantity computed as verl does: broadcast to [B, T], whiten over the mask's elements.
    g = torch.Generator().manual_seed(3)
    rewards, groups = torch.rand(12, generator=g), torch.arange(3).repeat_interleave(4)
    lengths = torch.randint(1, 9, (12,), generator=g)
    mask = (torch.arange(8)[None, :] < lengths[:, None]).float()  # [12, 8]
    centred = rewards - rewards.view(3, 4).mean(1).repeat_interleave(4)
    tokens = centred[:, None] * mask
    mean = (tokens * mask).sum() / mask.sum()
    var = ((tokens - mean) ** 2 * mask).sum() / mask.sum() * (mask.sum() / (mask.sum() - 1))
    verl = ((tokens - mean) * torch.rsqrt(var + 1e-8) * mask)[:, 0]  # every row has its first token
    assert torch.allclose(compute_advantages(rewards, groups, RPP, lengths), verl, atol=1e-6)


def test_reinforce_pp_without_lengths_whitens_per_sequence() -> None:
    # Equal weights: mean 0, unbiased std sqrt(1/3), so +-0.5 / 0.57735 = +-0.866.
    adv = compute_advantages(REWARDS, GROUPS, RPP)
    assert adv.tolist() == pytest.approx([0.8660, -0.8660, 0.8660, -0.8660], abs=1e-4)


def test_equal_lengths_differ_from_per_sequence_only_by_the_bessel_correction() -> None:
    equal = compute_advantages(REWARDS, GROUPS, RPP, torch.tensor([5, 5, 5, 5]))
    # Bessel over 20 tokens instead of 4 sequences: the ratio of the two is sqrt((20 - 1) / 20 * 4 / 3).
    per_seq = compute_advantages(REWARDS, GROUPS, RPP)
    assert torch.allclose(equal, per_seq * math.sqrt(19 / 20 * 4 / 3), atol=1e-6)


def test_other_estimators_ignore_lengths() -> None:
    for name in ("grpo", "dr_grpo", "rloo"):
        alg = AlgorithmConfig(advantage_estimator=name)
        assert torch.equal(
            compute_advantages(REWARDS, GROUPS, alg, LENGTHS), compute_advantages(REWARDS, GROUPS, alg)
        )
