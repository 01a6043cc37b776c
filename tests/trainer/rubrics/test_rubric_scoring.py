"""RubricScorer: rule criteria on a batch, errors kept per rollout, and the keys added to the ScoreBatch."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pytest

from trainer.rubrics.config import RubricConfig
from trainer.rubrics.rules import RuleOutcome, RuleParams
from trainer.rubrics.scoring import RubricScorer, add_rubric_scores, criterion_key
from trainer.samples import Sample
from trainer.verifiers.scoring import ScoreBatch

SAMPLE = Sample(id="0", prompt="2+3", answer="5")


def scorer(aggregation: str = "weighted_sum", **extra: Any) -> RubricScorer:
    return RubricScorer(
        RubricConfig.model_validate(
            {
                "aggregation": aggregation,
                "criteria": [
                    {
                        "name": "correct",
                        "scorer": "rule",
                        "rule": {"type": "verifier", "params": {"name": "exact"}},
                    },
                    {
                        "name": "short",
                        "scale": "likert5",
                        "weight": 3,
                        "scorer": "rule",
                        "rule": {"type": "length", "params": {"unit": "chars", "max": 1}},
                    },
                    {"name": "people", "scorer": "human"},
                ],
                **extra,
            }
        )
    )


def verifier_scores(n: int) -> ScoreBatch:
    return ScoreBatch(
        total=[0.5] * n,
        per_verifier={"exact": [0.5] * n},
        correct=[True] * n,
        details=[{"exact": {}} for _ in range(n)],
    )


def test_rule_criteria_are_scored_on_their_scale_and_aggregated() -> None:
    result = scorer().score(["5", "55", "6"], [SAMPLE] * 3, [0, 0, 0])
    assert result.scores == {"correct": [1.0, 0.0, 0.0], "short": [5.0, 1.0, 5.0]}
    assert result.reward == pytest.approx([1.0, 0.0, 0.75])  # (1*c + 3*s_norm) / 4
    assert "people" not in result.scores


def test_the_rank_aggregator_is_used_when_configured() -> None:
    result = scorer("rank").score(["5", "55", "6"], [SAMPLE] * 3, [0, 0, 0])
    # correct: 1,0,0 -> 1, .25, .25; short: 5,1,5 -> .75, 0, .75; (u_c + 3 u_s) / 4
    assert result.reward == pytest.approx([0.8125, 0.0625, 0.625])


def test_the_score_batch_gets_a_key_per_criterion_and_the_weighted_rubric_reward() -> None:
    s = scorer(reward_weight=2.0)
    extended = add_rubric_scores(verifier_scores(2), s.score(["5", "55"], [SAMPLE] * 2, [0, 0]), s)
    assert extended.per_verifier[criterion_key("short")] == [1.0, 0.0]  # normalised to [0, 1]
    assert extended.per_verifier["rubric"] == [1.0, 0.0]
    assert extended.total == [0.5 + 2.0, 0.5]
    detail = extended.details[1][criterion_key("short")]
    assert detail["score"] == 1.0 and detail["scale"] == "likert5" and detail["count"] == 2
    assert extended.details[0]["exact"] == {} and extended.correct == [True, True]


class ExplodingRule:
    """Raises on 'boom': checks the never-raise contract of scoring."""

    Params: ClassVar[type[RuleParams]] = RuleParams

    def __call__(self, completion: str, sample: Sample) -> RuleOutcome:
        if completion == "boom":
            raise RuntimeError("kaput")
        return RuleOutcome(1.0)


def test_a_rule_that_raises_scores_that_rollout_nan_and_keeps_the_error() -> None:
    s = RubricScorer(
        RubricConfig.model_validate(
            {
                "criteria": [
                    {"name": "x", "scorer": "rule", "rule": {"type": "regex", "params": {"pattern": "."}}}
                ]
            }
        )
    )
    s.rules["x"] = ExplodingRule()
    result = s.score(["ok", "boom"], [SAMPLE] * 2, [0, 0])
    assert result.scores["x"][0] == 1.0 and math.isnan(result.scores["x"][1])
    assert result.details["x"][1]["error"] == "RuntimeError: kaput"
    extended = add_rubric_scores(verifier_scores(2), result, s)
    assert extended.per_verifier["rubric/x"] == [1.0, 0.0]
    assert extended.details[1]["rubric/x"]["score"] is None


def test_a_judge_rubric_needs_a_judge() -> None:
    config = RubricConfig.model_validate(
        {"criteria": [{"name": "j", "scorer": "judge"}], "judge_model": {"name_or_path": "tiny:addition"}}
    )
    with pytest.raises(ValueError, match="pass the LLMJudge"):
        RubricScorer(config)
