"""Benchmark metrics against hand-computed values: pass@k, avg@n, maj@k (ties), bootstrap CIs."""

from math import comb

import numpy as np
import pytest

from trainer.evaluation.metrics import (
    avg_at_n,
    bootstrap_ci,
    maj_at_k,
    majority_answer,
    normalise_answer,
    pass_at_k,
    pass_at_k_curve,
)


def test_pass_at_k_is_zero_when_no_sample_is_correct():
    assert pass_at_k(8, 0, 1) == 0.0
    assert pass_at_k(8, 0, 8) == 0.0


def test_pass_at_k_is_one_when_every_sample_is_correct():
    assert pass_at_k(8, 8, 1) == 1.0
    assert pass_at_k(8, 8, 8) == 1.0


def test_pass_at_n_is_one_as_soon_as_one_sample_is_correct():
    assert pass_at_k(8, 1, 8) == 1.0


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)


def test_pass_at_k_matches_a_hand_computed_mid_case():
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)


def test_pass_at_k_equals_the_binomial_form_everywhere_small():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


def test_pass_at_k_stays_finite_for_large_n():
    # C(2000, 1000) overflows a float; the product form does not form it.
    value = pass_at_k(2000, 1, 1000)
    assert value == pytest.approx(0.5)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 2, 0), (4, 2, 5)])
def test_pass_at_k_refuses_impossible_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_avg_at_n_is_the_mean_score():
    assert avg_at_n([1.0, 0.0, 0.5, 0.5]) == pytest.approx(0.5)


def test_avg_at_n_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        avg_at_n([])


def test_maj_at_k_counts_the_majority_answer():
    assert maj_at_k(["7", "5", "7"], [True, False, True], 3) == 1.0
    assert maj_at_k(["5", "7", "5"], [False, True, False], 3) == 0.0


def test_maj_at_k_breaks_ties_by_first_occurrence():
    assert maj_at_k(["5", "7", "7", "5"], [False, True, True, False], 4) == 0.0  # "5" appeared first
    assert maj_at_k(["7", "5", "5", "7"], [True, False, False, True], 4) == 1.0


def test_maj_at_k_votes_over_the_first_k_samples_only():
    answers, correct = ["5", "7", "7", "7"], [False, True, True, True]
    assert maj_at_k(answers, correct, 1) == 0.0
    assert maj_at_k(answers, correct, 4) == 1.0


def test_samples_without_an_answer_do_not_vote():
    assert maj_at_k([None, None, "7"], [False, False, True], 3) == 1.0
    assert maj_at_k([None, None], [False, False], 2) == 0.0
    assert majority_answer([None, None]) is None


def test_answers_are_normalised_before_voting():
    answers = [normalise_answer(a) for a in ["95.0", " 95 ", "Paris.", "paris", "1/2", "0.5", ""]]
    assert answers == ["95", "95", "paris", "paris", "1/2", "1/2", None]


def test_a_huge_exponent_is_not_expanded():
    assert normalise_answer("1e99999") == "1e99999"


def test_bootstrap_ci_of_constant_values_is_the_point():
    assert bootstrap_ci([[0.5, 0.5, 0.5]], samples=200) == (0.5, 0.5)


def test_bootstrap_ci_brackets_the_mean_and_is_reproducible():
    values = [[0.0, 1.0] * 20]
    low, high = bootstrap_ci(values, samples=500, seed=3)
    assert low < 0.5 < high
    assert (low, high) == bootstrap_ci(values, samples=500, seed=3)


def test_bootstrap_over_seeds_widens_the_interval_when_seeds_disagree():
    rng = np.random.default_rng(0)
    per_problem = rng.random(50)
    agreeing = np.stack([per_problem, per_problem])  # [S=2, P]
    disagreeing = np.stack([per_problem * 0.2, np.minimum(per_problem * 1.8, 1)])
    width = [hi - lo for lo, hi in (bootstrap_ci(t, samples=2000) for t in (agreeing, disagreeing))]
    assert width[1] > width[0]


def test_bootstrap_ignores_missing_cells():
    low, high = bootstrap_ci([[1.0, np.nan], [1.0, 1.0]], samples=100)
    assert (low, high) == (1.0, 1.0)


def test_zero_bootstrap_samples_give_the_point():
    assert bootstrap_ci([[0.0, 1.0]], samples=0) == (0.5, 0.5)


def test_pass_at_k_curve_averages_over_problems():
    curve = pass_at_k_curve([(4, 1), (4, 4)])
    assert curve == pytest.approx({1: (0.25 + 1) / 2, 2: (0.5 + 1) / 2, 3: (0.75 + 1) / 2, 4: 1.0})
