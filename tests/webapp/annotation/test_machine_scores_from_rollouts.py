"""Machine scores an item snapshots from a rollout's rubric/<criterion> keys (trainer/rubrics/scoring.py)."""

from __future__ import annotations

from webapp.annotation.snapshots import machine_scores

CRITERIA = [
    {"name": "has_answer", "scorer": "rule", "scale": "binary", "min_value": 0.0, "max_value": 1.0},
    {"name": "clarity", "scorer": "judge", "scale": "likert5", "min_value": 1.0, "max_value": 5.0},
    {"name": "tone", "scorer": "human", "scale": "range", "min_value": 0.0, "max_value": 10.0},
]


def test_the_raw_score_in_the_detail_wins_over_the_normalised_reward() -> None:
    found = machine_scores(
        rewards={"rubric/has_answer": 1.0, "rubric/clarity": 0.75},
        details={"rubric/has_answer": {"score": 1.0, "scorer": "rule"}, "rubric/clarity": {"score": 4.0}},
        criteria=CRITERIA,
    )
    assert {k: v["score"] for k, v in found.items()} == {"has_answer": 1.0, "clarity": 4.0}
    assert found["clarity"]["scorer"] == "judge" and found["clarity"]["detail"] == {"score": 4.0}


def test_an_unscorable_judge_output_stays_unscored_not_zero() -> None:
    found = machine_scores(
        rewards={"rubric/clarity": 0.0},
        details={"rubric/clarity": {"score": None, "reason": "unparseable judge output"}},
        criteria=CRITERIA,
    )
    assert found["clarity"]["score"] is None


def test_without_a_detail_the_normalised_reward_is_mapped_back_onto_the_scale() -> None:
    found = machine_scores(rewards={"rubric/clarity": 0.75}, details={}, criteria=CRITERIA)
    assert found["clarity"]["score"] == 4.0


def test_people_only_criteria_and_missing_keys_give_nothing() -> None:
    assert machine_scores(rewards={"rubric/tone": 0.5, "exact": 1.0}, details={}, criteria=CRITERIA) == {}
