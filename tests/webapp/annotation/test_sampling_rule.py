"""Which rollouts a sampling rule picks: seeded random N, last step only, only incorrect, reward strata."""

from __future__ import annotations

import pytest

from webapp.annotation.sampling import Candidate, SamplingRule, sample_candidates, sampling_rule_from_dict
from webapp.core.errors import InvalidInput

POOL = [Candidate(id=i, step=1 + i // 10, reward=(i % 10) / 10, correct=i % 3 == 0) for i in range(30)]


def test_random_n_is_reproducible_with_the_same_seed_and_differs_with_another() -> None:
    first = sample_candidates(POOL, SamplingRule(n=8, seed=1))
    assert len(first) == len(set(first)) == 8
    assert sample_candidates(POOL, SamplingRule(n=8, seed=1)) == first
    assert sample_candidates(POOL, SamplingRule(n=8, seed=2)) != first


def test_last_step_only_keeps_the_newest_step() -> None:
    chosen = sample_candidates(POOL, SamplingRule(n=100, last_step_only=True))
    assert chosen == list(range(20, 30))


def test_only_incorrect_drops_correct_rollouts() -> None:
    chosen = sample_candidates(POOL, SamplingRule(n=100, only_incorrect=True))
    assert chosen and all(i % 3 != 0 for i in chosen)


def test_stratified_draws_from_every_reward_band() -> None:
    chosen = sample_candidates(POOL, SamplingRule(strategy="stratified", n=5, strata=5, seed=3))
    bands = sorted({int((i % 10) / 2) for i in chosen})  # rewards 0-.1, .2-.3, ... each a fifth of the pool
    assert len(chosen) == 5 and bands == [0, 1, 2, 3, 4]


def test_fewer_candidates_than_n_gives_them_all() -> None:
    assert sample_candidates(POOL[:3], SamplingRule(n=10)) == [0, 1, 2]


def test_a_bad_rule_names_each_wrong_field() -> None:
    with pytest.raises(InvalidInput) as err:
        sampling_rule_from_dict({"strategy": "best", "n": 0, "colour": 1})
    assert set(err.value.fields) == {"sampling.strategy", "sampling.n", "sampling.colour"}
    assert "random, stratified" in err.value.fields["sampling.strategy"][0]
