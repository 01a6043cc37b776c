"""Advantage estimators and group statistics on groups of different sizes (dynamic sampling, VIGOR)."""

from __future__ import annotations

import statistics

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.methods.advantages import ADVANTAGES
from trainer.methods.group_stats import group_mean, group_sizes, group_std

# Group 0 has 2 completions, group 1 has 5.
REWARDS = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
IDS = torch.tensor([0, 0, 1, 1, 1, 1, 1])


def test_group_stats_use_each_groups_own_size() -> None:
    assert group_sizes(IDS).tolist() == [2, 2, 5, 5, 5, 5, 5]
    assert group_mean(REWARDS, IDS).tolist() == pytest.approx([0.5, 0.5] + [0.4] * 5)
    std0, std1 = statistics.stdev([1.0, 0.0]), statistics.stdev([1.0, 1.0, 0.0, 0.0, 0.0])
    assert group_std(REWARDS, IDS).tolist() == pytest.approx([std0] * 2 + [std1] * 5)


def test_rloo_with_group_sizes_2_and_5_is_the_leave_one_out_baseline() -> None:
    adv = ADVANTAGES.get("rloo")(
        REWARDS, IDS, AlgorithmConfig(advantage_estimator="rloo").advantage_estimator.params
    )
    # Group 0: r_i - r_other -> 1 - 0, 0 - 1. Group 1: r_i - mean of the other four.
    expected = [1.0, -1.0, 1 - 1 / 4, 1 - 1 / 4, 0 - 2 / 4, 0 - 2 / 4, 0 - 2 / 4]
    assert adv.tolist() == pytest.approx(expected)


def test_grpo_divides_by_each_groups_own_std() -> None:
    params = AlgorithmConfig().advantage_estimator.params
    adv = ADVANTAGES.get("grpo")(REWARDS, IDS, params)
    std0, std1 = statistics.stdev([1.0, 0.0]), statistics.stdev([1.0, 1.0, 0.0, 0.0, 0.0])
    eps = params.advantage_eps
    expected = [0.5 / (std0 + eps), -0.5 / (std0 + eps)] + [
        x / (std1 + eps) for x in (0.6, 0.6, -0.4, -0.4, -0.4)
    ]
    assert adv.tolist() == pytest.approx(expected)


def test_a_group_of_one_gets_zero_advantage_from_every_estimator() -> None:
    rewards, ids = torch.tensor([1.0, 1.0, 0.0, 0.5]), torch.tensor([0, 1, 1, 2])
    for name in ("grpo", "dr_grpo", "rloo"):
        adv = ADVANTAGES.get(name)(
            rewards, ids, AlgorithmConfig(advantage_estimator=name).advantage_estimator.params
        )
        assert adv[0] == 0 and adv[3] == 0, name


def test_vectorised_grpo_matches_a_per_group_loop_on_random_unequal_groups() -> None:
    gen = torch.Generator().manual_seed(0)
    sizes = [2, 7, 3, 5, 4]
    ids = torch.tensor([g for g, n in enumerate(sizes) for _ in range(n)])
    rewards = torch.rand(len(ids), generator=gen)
    params = AlgorithmConfig().advantage_estimator.params
    adv = ADVANTAGES.get("grpo")(rewards, ids, params)
    for g in range(len(sizes)):
        r = rewards[ids == g]
        expected = (r - r.mean()) / (r.std() + params.advantage_eps)
        assert adv[ids == g].tolist() == pytest.approx(expected.tolist(), abs=1e-6)
