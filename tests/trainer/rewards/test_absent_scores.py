"""Absent scores in ``score_batch`` and in the advantage estimators, on hand-made values."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import ClassVar

import pytest
import torch

from trainer.config import config_from_dict
from trainer.methods.advantages import compute_advantages
from trainer.samples import Sample
from trainer.verifiers.base import VerifierParams, VerifierResult, absent_result
from trainer.verifiers.scoring import score_batch

SAMPLES = [Sample(f"s{i}", "q", "a") for i in range(4)]
TEXTS = ["a", "b", "c", "d"]


class Scripted:
    """Returns the given results as they are."""

    name: ClassVar[str] = "scripted"
    Params: ClassVar[type[VerifierParams]] = VerifierParams

    def __init__(self, results: list[VerifierResult], absent_on_failure: bool = False) -> None:
        self.results, self.absent_on_failure = results, absent_on_failure

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return self.results


class Broken:
    name: ClassVar[str] = "broken"
    Params: ClassVar[type[VerifierParams]] = VerifierParams

    def __init__(self, absent_on_failure: bool) -> None:
        self.absent_on_failure = absent_on_failure

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        raise ConnectionError("connection refused")


def present(reward: float, correct: bool = True) -> VerifierResult:
    return VerifierResult(reward, correct, {})


def test_an_absent_score_is_nan_adds_nothing_to_the_total_and_is_not_correct() -> None:
    judge = Scripted([present(1.0), absent_result("timeout after 30 s"), present(0.0, False), present(0.5)])
    digit = Scripted([present(1.0)] * 4)
    scores = score_batch([("judge", judge), ("digit", digit)], [2.0, 0.5], TEXTS, SAMPLES)
    assert scores.total == [2.5, 0.5, 0.5, 1.5]
    assert scores.absent == {"judge": [False, True, False, False], "digit": [False] * 4}
    assert math.isnan(scores.per_verifier["judge"][1]) and scores.correct == [True, False, False, True]
    assert scores.details[1]["judge"]["absent"] == "timeout after 30 s"
    assert scores.details[1]["judge"]["reason"] == "absent: timeout after 30 s"
    assert set(scores.latency_s) == {"judge", "digit"} and all(s >= 0 for s in scores.latency_s.values())
    json.dumps(scores.details, allow_nan=False)
    assert scores.absent_rows({"judge": 2.0, "digit": 0.5}) == [False, True, False, False]
    assert scores.absent_rows({"judge": 0.0, "digit": 0.5}) == [False] * 4  # a weight-0 monitor drops nothing
    assert scores.absent_fractions() == {"judge": 0.25, "digit": 0.0}
    assert (
        scores.last_absent_reason("judge") == "timeout after 30 s"
        and scores.last_absent_reason("digit") is None
    )


def test_an_absent_result_is_absent_whatever_reward_it_carries() -> None:
    claimed = VerifierResult(0.0, True, {"absent": "unparseable judge output"})
    scores = score_batch([("judge", Scripted([claimed] * 4))], [1.0], TEXTS, SAMPLES)
    assert all(math.isnan(r) for r in scores.per_verifier["judge"]) and scores.correct == [False] * 4


def test_a_programmatic_verifier_that_crashes_still_scores_0_with_an_error() -> None:
    scores = score_batch([("code", Broken(absent_on_failure=False))], [1.0], TEXTS, SAMPLES)
    assert scores.per_verifier["code"] == [0.0] * 4 and scores.absent["code"] == [False] * 4
    assert "ConnectionError: connection refused" in scores.details[0]["code"]["error"]


def test_a_model_source_that_crashes_is_absent_not_0() -> None:
    scores = score_batch([("rm", Broken(absent_on_failure=True))], [1.0], TEXTS, SAMPLES)
    assert scores.absent["rm"] == [True] * 4 and scores.total == [0.0] * 4
    assert "ConnectionError: connection refused" in scores.details[0]["rm"]["absent"]


def test_a_nan_reward_without_absent_is_still_an_error() -> None:
    scores = score_batch([("v", Scripted([present(math.nan)] * 4))], [1.0], TEXTS, SAMPLES)
    assert scores.per_verifier["v"] == [0.0] * 4 and "non-finite reward" in scores.details[0]["v"]["error"]


@pytest.mark.parametrize(
    "estimator",
    [
        "grpo",
        "dr_grpo",
        "rloo",
        "reinforce_pp",
        {"name": "grpo", "params": {"scale_rewards": "batch"}},
    ],
)
def test_the_estimator_runs_on_the_present_members_only(estimator: object) -> None:
    algorithm = config_from_dict({"algorithm": {"advantage_estimator": estimator}}).algorithm
    rewards = torch.tensor(
        [1.0, 0.0, 9.0, 0.5, 1.0, 0.0, -7.0, 1.0]
    )  # [N]; 9 and -7 are absent rows' partial totals
    group_ids = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    lengths = torch.tensor([3, 1, 4, 2, 5, 2, 1, 3])
    kept = torch.tensor([True, True, False, True, True, True, False, True])
    out = compute_advantages(rewards, group_ids, algorithm, lengths, present=kept)
    alone = compute_advantages(rewards[kept], group_ids[kept], algorithm, lengths[kept])
    assert out[~kept].tolist() == [0.0, 0.0]
    assert out[kept].tolist() == pytest.approx(alone.tolist())
    whole = compute_advantages(rewards, group_ids, algorithm, lengths)
    assert not torch.allclose(out[kept], whole[kept])  # the absent rows would have moved the statistics


def test_grpo_on_present_members_by_hand() -> None:
    algorithm = config_from_dict({}).algorithm
    rewards = torch.tensor([1.0, 0.0, 5.0, 0.0])
    out = compute_advantages(
        rewards, torch.tensor([0, 0, 0, 0]), algorithm, present=torch.tensor([1, 1, 0, 1]).bool()
    )
    # present [1, 0, 0]: mean 1/3, Bessel std sqrt(1/3)
    std = math.sqrt(1 / 3)
    assert out.tolist() == pytest.approx(
        [(2 / 3) / (std + 1e-4), (-1 / 3) / (std + 1e-4), 0.0, (-1 / 3) / (std + 1e-4)]
    )


def test_a_step_with_every_sample_absent_has_no_advantages() -> None:
    algorithm = config_from_dict({}).algorithm
    out = compute_advantages(
        torch.ones(4), torch.zeros(4, dtype=torch.long), algorithm, present=torch.zeros(4).bool()
    )
    assert out.tolist() == [0.0] * 4
