"""Machine (rule/judge) scores against the people's consensus: alpha and exact agreement per criterion."""

from __future__ import annotations

import pytest

from webapp.annotation.agreement import human_consensus, judge_vs_human


def test_binary_consensus_is_the_majority_and_an_even_split_has_none() -> None:
    assert human_consensus([1.0, 1.0, 0.0], scale="binary") == 1.0
    assert human_consensus([1.0, 0.0], scale="binary") is None


def test_likert_consensus_is_the_mean_rounded_half_up() -> None:
    assert human_consensus([3.0, 4.0], scale="likert5") == 4.0
    assert human_consensus([2.0, 2.0, 3.0], scale="likert5") == 2.0


def test_exact_agreement_counts_items_where_the_machine_equals_the_majority() -> None:
    ratings = {1: {7: 1.0, 8: 1.0}, 2: {7: 0.0, 8: 0.0}, 3: {7: 1.0, 8: 0.0}, 4: {7: 0.0, 8: 0.0}}
    machine = {1: 1.0, 2: 0.0, 3: 1.0, 4: 1.0}
    result = judge_vs_human(ratings, machine, scale="binary", min_value=0, max_value=1)
    assert result.items == 3 and result.ties == 1  # item 3 split evenly
    assert result.exact_agreement == pytest.approx(2 / 3)
    assert result.alpha is not None and result.alpha < 1


def test_a_machine_that_matches_the_people_everywhere_has_alpha_one() -> None:
    ratings = {i: {7: float(1 + i % 5), 8: float(1 + i % 5)} for i in range(10)}
    machine = {i: float(1 + i % 5) for i in range(10)}
    result = judge_vs_human(ratings, machine, scale="likert5", min_value=1, max_value=5)
    assert result.alpha == pytest.approx(1.0) and result.exact_agreement == 1.0 and result.items == 10


def test_range_scores_agree_within_five_percent_of_the_range() -> None:
    ratings = {1: {7: 5.0}, 2: {7: 2.0}}
    result = judge_vs_human(ratings, {1: 5.4, 2: 3.0}, scale="range", min_value=0, max_value=10)
    assert result.exact_agreement == 0.5
