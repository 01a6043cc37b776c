"""Reward-source evaluation statistics (trainer/rewards/evaluation.py) against hand-computed values and brute force."""

from __future__ import annotations

import math
from itertools import combinations, permutations

import numpy as np
import pytest

from trainer.rewards.evaluation import (
    ScoredSample,
    audit_judge,
    best_of_n_baselines,
    best_of_n_curve,
    majority_vote_accuracy,
    pairwise_accuracy,
    top_choice_probabilities,
)
from trainer.rewards.master_keys import MASTER_KEYS
from trainer.samples import Sample
from trainer.verifiers import build_verifier

NAN = math.nan


def test_pairwise_accuracy_counts_wins_ties_as_half_and_excludes_absent_pairs() -> None:
    result = pairwise_accuracy([2.0, 1.0, 0.5, NAN, 3.0], [1.0, 1.0, 0.9, 0.0, None], resamples=0)
    assert result.accuracy == pytest.approx((1 + 0.5 + 0) / 3)
    assert (result.pairs, result.scored, result.absent, result.ties) == (5, 3, 2, 1)


def test_pairwise_accuracy_with_every_pair_absent_has_no_value() -> None:
    result = pairwise_accuracy([NAN], [1.0])
    assert result.accuracy is None and result.absent == 1


def test_pairwise_bootstrap_interval_covers_the_estimate_and_narrows_with_more_pairs() -> None:
    rng = np.random.default_rng(3)

    def interval(n: int) -> tuple[float, float, float]:
        chosen = rng.normal(0.5, 1.0, n)
        rejected = rng.normal(0.0, 1.0, n)
        r = pairwise_accuracy(chosen.tolist(), rejected.tolist(), seed=1, resamples=2000)
        assert r.accuracy is not None and r.ci_low is not None and r.ci_high is not None
        return r.ci_low, r.accuracy, r.ci_high

    low_small, point_small, high_small = interval(40)
    low_big, point_big, high_big = interval(4000)
    assert low_small <= point_small <= high_small
    assert low_big <= point_big <= high_big
    assert high_big - low_big < (high_small - low_small) / 3


def test_pairwise_accuracy_is_reproducible_for_a_seed() -> None:
    a = pairwise_accuracy([1, 2, 0, 3], [0, 1, 1, 2], seed=7)
    b = pairwise_accuracy([1, 2, 0, 3], [0, 1, 1, 2], seed=7)
    assert a == b


def _brute_force_best_of_n(group: list[ScoredSample], n: int) -> float:
    """Average over every n-subset and every order of the tied scores (absent ranked last) of the pick's correctness."""
    k, values = len(group), []
    for subset in combinations(range(k), n):
        for order in permutations(subset):  # a random tie-break: each order of the subset equally likely
            keyed = [(-math.inf if math.isnan(group[i].score) else group[i].score) for i in order]
            best = max(keyed)
            first = next(i for i, key in zip(order, keyed, strict=True) if key == best)
            values.append(float(group[first].correct))
    return float(np.mean(values))


def test_best_of_n_exact_estimator_matches_brute_force_with_ties_and_absent_scores() -> None:
    group = [
        ScoredSample("1", True, 0.9),
        ScoredSample("2", False, 0.9),  # tied with a correct one
        ScoredSample("3", False, 0.5),
        ScoredSample("1", True, NAN),  # absent: ranked last
        ScoredSample("4", False, NAN),
        ScoredSample("1", True, 0.1),
    ]
    for n in range(1, 7):
        curve = best_of_n_curve([group], [n], resamples=0)
        assert curve.best_of_n[0] == pytest.approx(_brute_force_best_of_n(group, n)), n
    assert curve.absent == 2


def test_top_choice_probabilities_sum_to_one_and_match_the_order_statistic() -> None:
    probs = top_choice_probabilities([0.3, 0.1, 0.2, 0.4], 2)
    # sorted: 0.4 (p0), 0.3 (p1), 0.2 (p2), 0.1 (p3); C(3,1)/6, C(2,1)/6, C(1,1)/6, 0
    assert probs.tolist() == pytest.approx([2 / 6, 0.0, 1 / 6, 3 / 6])
    assert probs.sum() == pytest.approx(1.0)


def test_best_of_n_baselines_random_oracle_and_majority_by_hand() -> None:
    groups = [
        [
            ScoredSample("5", True, 0),
            ScoredSample("7", False, 0),
            ScoredSample("7", False, 0),
            ScoredSample("5", True, 0),
        ],
        [
            ScoredSample("2", True, 0),
            ScoredSample(None, False, 0),
            ScoredSample("3", False, 0),
            ScoredSample("2", True, 0),
        ],
    ]
    base = best_of_n_baselines(groups, [1, 2, 4], seed=0)
    assert base["random"] == pytest.approx([0.5, 0.5, 0.5])
    # pass@2: group 1: 1 - C(2,2)/C(4,2) = 5/6; group 2 the same
    assert base["oracle"] == pytest.approx([0.5, 5 / 6, 1.0])
    # maj@4: group 1 is a 2-2 tie (half right); group 2: "2" wins twice against "3" once
    assert base["majority"][2] == pytest.approx((0.5 + 1.0) / 2)
    # maj@2 by enumeration: group 1: pairs (5,7)x4 tie=.5, (5,5) 1, (7,7) 0 -> (4*.5+1)/6; group 2: subsets with
    # "2": {2,None}->1 x2, {2,3}->.5 x2, {2,2}->1, {None,3}->0 -> (2+1+1)/6
    assert base["majority"][1] == pytest.approx(((4 * 0.5 + 1) / 6 + 4 / 6) / 2)


def test_majority_vote_by_random_subsets_approaches_enumeration() -> None:
    group = [ScoredSample(str(i % 3), i % 3 == 0, 0) for i in range(12)]
    exact = majority_vote_accuracy(
        group, 5, np.random.default_rng(0), draws=10_000
    )  # C(12,5)=792: enumerated
    sampled = majority_vote_accuracy(group, 5, np.random.default_rng(0), draws=500)
    assert abs(exact - sampled) < 0.06


def test_a_perfect_source_reaches_the_oracle_and_a_constant_source_the_random_baseline() -> None:
    rng = np.random.default_rng(0)
    groups = [
        [ScoredSample(str(j), bool(c), float(c)) for j, c in enumerate(rng.integers(0, 2, 8))]
        for _ in range(30)
    ]
    curve = best_of_n_curve(groups, [1, 2, 4, 8], seed=0)
    assert curve.best_of_n == pytest.approx(curve.oracle)
    flat = [[ScoredSample(s.answer, s.correct, 0.0) for s in g] for g in groups]
    assert best_of_n_curve(flat, [1, 2, 4, 8]).best_of_n == pytest.approx(curve.random)
    assert curve.best_of_n_ci[2][0] <= curve.best_of_n[2] <= curve.best_of_n_ci[2][1]


def test_best_of_n_refuses_n_larger_than_the_samples() -> None:
    with pytest.raises(ValueError, match="between 1 and the 4 samples"):
        best_of_n_curve([[ScoredSample("1", True, 1.0)] * 4], [8])


def _problems() -> list[Sample]:
    return [Sample(id=f"p{i}", prompt=f"{i}+{i}=", answer=str(2 * i)) for i in range(3)]


def test_audit_of_a_verifier_that_accepts_everything_has_false_positive_rate_one() -> None:
    accept_all = build_verifier("regex_format", {"pattern": "", "match": "search"})
    audit = audit_judge(accept_all, _problems(), batch_size=5)
    assert audit.fpr == 1.0
    assert {r.key for r in audit.rows} >= {k.key for k in MASTER_KEYS} | {"repeat_question"}
    assert all(r.responses == 3 and r.fpr == 1.0 for r in audit.rows)


def test_audit_of_the_exact_verifier_has_false_positive_rate_zero() -> None:
    audit = audit_judge(build_verifier("exact"), _problems())
    assert audit.fpr == 0.0
    assert audit.to_json()["master_key_fpr"] == 0.0 and audit.to_json()["repeat_question_fpr"] == 0.0


def test_audit_with_a_threshold_counts_scores_above_it() -> None:
    # regex_format gives reward 1 to a match, 0 otherwise: a threshold of 0.5 accepts exactly the matches
    colon_only = build_verifier("regex_format", {"pattern": ":", "match": "search"})
    audit = audit_judge(colon_only, _problems(), threshold=0.5)
    by_key = {r.key: r for r in audit.rows}
    assert by_key["colon"].fpr == 1.0 and by_key["period"].fpr == 0.0
    assert by_key["repeat_question_as_answer"].fpr == 1.0  # "The answer is: ..." holds a colon
