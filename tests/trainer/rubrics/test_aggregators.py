"""weighted_sum and rank (RLVR^2) against hand-computed values."""

from __future__ import annotations

import math

import pytest

from trainer.rubrics.aggregators import AGGREGATORS, rank, weighted_sum, win_rate_utilities
from trainer.rubrics.config import CriterionSpec

NAN = math.nan


def crit(name: str, scale: str = "binary", weight: float = 1.0, **kw: float) -> CriterionSpec:
    return CriterionSpec(name=name, scale=scale, weight=weight, scorer="human", **kw)  # type: ignore[arg-type]


def test_both_aggregators_are_registered() -> None:
    assert AGGREGATORS.names() == ["rank", "weighted_sum"]


def test_weighted_sum_normalises_each_scale_then_takes_the_weighted_mean() -> None:
    criteria = [
        crit("ok"),
        crit("quality", "likert5", weight=2.0),
        crit("score", "range", weight=1.0, min_value=-10, max_value=10),
    ]
    # ok=1 -> 1; likert 4 -> (4-1)/4 = 0.75; range 0 -> 0.5.  (1*1 + 2*0.75 + 1*0.5) / 4 = 0.75
    assert weighted_sum([[1.0, 4.0, 0.0]], criteria, [0]) == [pytest.approx(0.75)]


def test_weighted_sum_counts_an_unscorable_criterion_as_zero() -> None:
    criteria = [crit("a"), crit("b", "likert5")]
    assert weighted_sum([[1.0, NAN]], criteria, [0]) == [pytest.approx(0.5)]


def test_win_rates_by_hand() -> None:
    # scores 3, 1, 3, 2: the first beats 1 and 2, ties the other 3 -> (1 + 0.5 + 1) / 3
    assert win_rate_utilities([3, 1, 3, 2]) == pytest.approx([2.5 / 3, 0.0, 2.5 / 3, 1 / 3])
    assert win_rate_utilities([7.0]) == [0.5]


def test_an_unscorable_rollout_loses_to_every_scored_one() -> None:
    assert win_rate_utilities([NAN, 0.0, NAN]) == pytest.approx([0.25, 1.0, 0.25])


def test_rank_merges_per_criterion_utilities_within_each_group() -> None:
    criteria = [crit("correct"), crit("style", "likert5", weight=3.0)]
    scores = [
        [1.0, 2.0],
        [0.0, 5.0],
        [1.0, 4.0],  # group 0
        [0.0, 1.0],
        [1.0, 1.0],  # group 1
    ]
    # group 0, correct: 1,0,1 -> win rates 0.75, 0, 0.75; style: 2,5,4 -> 0, 1, 0.5
    #   merged (1*u_c + 3*u_s) / 4: 0.1875, 0.75, 0.5625
    # group 1, correct: 0,1 -> 0, 1; style: 1,1 -> 0.5, 0.5 -> (0 + 1.5)/4, (1 + 1.5)/4
    assert rank(scores, criteria, [0, 0, 0, 1, 1]) == pytest.approx([0.1875, 0.75, 0.5625, 0.375, 0.625])


def test_rank_ignores_magnitudes_but_weighted_sum_does_not() -> None:
    criteria = [crit("score", "range", min_value=0, max_value=100)]
    near, far = [[50.0], [51.0]], [[0.0], [100.0]]
    assert rank(near, criteria, [0, 0]) == rank(far, criteria, [0, 0]) == [0.0, 1.0]
    assert weighted_sum(near, criteria, [0, 0]) != weighted_sum(far, criteria, [0, 0])


def test_rank_does_not_mix_groups_even_when_they_interleave() -> None:
    criteria = [crit("a", "range", min_value=0, max_value=10)]
    assert rank([[1.0], [9.0], [2.0], [3.0]], criteria, [0, 1, 0, 1]) == [0.0, 1.0, 1.0, 0.0]


def test_a_score_row_of_the_wrong_width_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="2 values for 1 criteria"):
        rank([[1.0, 2.0]], [crit("a")], [0])
