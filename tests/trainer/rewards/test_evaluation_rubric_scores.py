"""A rubric as a reward source (trainer/rewards/evaluation.py's ``RubricSource``): per-completion aggregates of a
rule-only rubric, an unscored criterion counted as absent (never 0), the ``rank`` aggregate within the caller's groups
only, and the statistics (pairwise accuracy, Best-of-N) computed on its scores."""

from __future__ import annotations

import math
from typing import Any

import pytest

from trainer.rewards.evaluation import (
    RubricSource,
    ScoredSample,
    audit_judge,
    best_of_n_curve,
    is_absent,
    pairwise_accuracy,
)
from trainer.rubrics.config import RubricConfig
from trainer.samples import Sample

CRITERIA: list[dict[str, Any]] = [
    {"name": "correct", "rule": {"type": "verifier", "params": {"name": "exact"}}},
    {"name": "short", "weight": 3, "rule": {"type": "length", "params": {"unit": "words", "max": 3}}},
    {"name": "tone", "scorer": "human", "scale": "likert5"},  # annotation only: never scored
]
SAMPLE = Sample(id="p", prompt="2+2=", answer="4")


def _source(aggregation: str = "weighted_sum", criteria: list[dict[str, Any]] = CRITERIA) -> RubricSource:
    return RubricSource(
        RubricConfig.model_validate({"name": "maths", "aggregation": aggregation, "criteria": criteria})
    )


def test_weighted_sum_is_the_weighted_mean_of_the_normalised_rule_scores() -> None:
    source = _source()
    completions = ["4", "5", "the answer is four, surely", "the answer is 5 I think"]
    rows = source.criterion_scores(completions, [SAMPLE] * 4)
    assert rows == [[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]  # the human criterion is not scored
    assert source.score(completions, [SAMPLE] * 4, [0, 0, 0, 0]) == [1.0, 0.75, 0.0, 0.0]
    assert source.score(completions, [SAMPLE] * 4, [0, 1, 2, 3]) == [
        1.0,
        0.75,
        0.0,
        0.0,
    ]  # groups do not matter
    results = source(completions, [SAMPLE] * 4)
    assert [r.reward for r in results] == [1.0, 0.75, 0.0, 0.0] and not any(r.correct for r in results)
    assert not source.group_relative


def test_an_unscored_criterion_makes_the_score_absent_never_zero() -> None:
    rows = [
        [1.0, 1.0],
        [math.nan, 1.0],
        [0.0, 0.0],
    ]  # e.g. an unparseable judge output on the first criterion
    for aggregation in ("weighted_sum", "rank"):
        scores = _source(aggregation).aggregate(rows, [0, 0, 0])
        assert is_absent(scores[1]) and not any(is_absent(s) for s in (scores[0], scores[2]))
    # rank compares only the scored members: the absent one neither wins nor loses against them
    ranked = _source("rank").aggregate(rows, [0, 0, 0])
    assert (ranked[0], ranked[2]) == (1.0, 0.0) and math.isnan(ranked[1])


def test_a_source_whose_criterion_could_not_be_scored_gives_an_absent_result() -> None:
    source = _source()
    source.criterion_scores = lambda completions, samples: [[math.nan, 1.0] for _ in completions]  # type: ignore[method-assign]
    (result,) = source(["4"], [SAMPLE])
    assert result.absent and math.isnan(result.reward) and not result.correct


def test_rank_is_group_relative_within_the_given_groups() -> None:
    source = _source("rank")
    assert source.group_relative
    completions = ["4", "5", "5", "the answer is five, surely"]
    # Two pairs: within each, the better response wins every criterion comparison or ties.
    scores = source.score(completions, [SAMPLE] * 4, [0, 0, 1, 1])
    # weights 1 ('correct') and 3 ('short'): a win is 1, a tie 0.5, a loss 0 per criterion
    assert scores[0] == pytest.approx(0.625) and scores[1] == pytest.approx(0.375)
    assert scores[2] == pytest.approx(0.875) and scores[3] == pytest.approx(0.125)
    # Each completion alone (the verifier seam) has nothing to compare with: 0.5 for all.
    assert [r.reward for r in source(completions, [SAMPLE] * 4)] == [0.5] * 4


def test_pairwise_accuracy_and_best_of_n_on_rubric_scores() -> None:
    source = _source()
    chosen = source.score(["4", "4", "5"], [SAMPLE] * 3, [0, 1, 2])
    rejected = source.score(["5", "the answer is five, surely", "5"], [SAMPLE] * 3, [0, 1, 2])
    acc = pairwise_accuracy(chosen, rejected, resamples=0)
    assert (acc.accuracy, acc.scored, acc.ties) == (pytest.approx(2.5 / 3), 3, 1)
    # Best-of-N: two problems of four samples; the rubric's 'correct' criterion is the oracle's exact check, so its
    # pick is right whenever any sample is.
    texts = [["4", "5", "6", "the answer is four, surely"], ["7", "8", "9", "3"]]
    answers = ["4", "3"]
    groups = []
    for k, (problem, answer) in enumerate(zip(texts, answers, strict=True)):
        sample = Sample(id=f"p{k}", prompt="?", answer=answer)
        scores = source.score(problem, [sample] * 4, [k] * 4)
        groups.append([ScoredSample(t, t == answer, s) for t, s in zip(problem, scores, strict=True)])
    curve = best_of_n_curve(groups, [1, 2, 4], resamples=0)
    assert curve.best_of_n == pytest.approx(curve.oracle) and curve.absent == 0
    assert curve.best_of_n[0] == pytest.approx(0.25)


def test_a_weighted_sum_rubric_is_audited_against_a_threshold() -> None:
    audit = audit_judge(_source(), [SAMPLE], threshold=0.8)
    # Master keys are short (the length criterion passes) but never the answer: 0.75 each, below the threshold.
    assert audit.fpr == 0.0 and audit.problems == 1 and sum(r.absent for r in audit.rows) == 0


def test_judge_criteria_need_a_judge_model() -> None:
    criteria = [{"name": "clear", "scorer": "judge", "scale": "likert5"}]
    with pytest.raises(ValueError, match=r"judge_model\.name_or_path"):
        _source(criteria=criteria)
    config = RubricConfig.model_validate(
        {"criteria": criteria, "judge_model": {"name_or_path": "tiny:chain"}}
    )
    with pytest.raises(ValueError, match="judge"):
        RubricSource(config)  # the caller loads the judge model (the worker does, on the CPU)
