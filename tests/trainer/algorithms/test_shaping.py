"""Label-free rewards (majority vote, soft consensus), DAPO overlong penalty and length penalty, by hand."""

from typing import Any

import pytest

from trainer.config import ExperimentConfig, config_from_dict
from trainer.methods.shaping import (
    LABEL_FREE_REWARDS,
    answer_key,
    majority_answer,
    overlong_penalty,
    shape_scores,
)
from trainer.samples import Sample
from trainer.verifiers.scoring import ScoreBatch


def config(**shaping: Any) -> ExperimentConfig:
    return config_from_dict({"rollout": {"max_completion_length": 16}, "shaping": shaping})


def scores(total: list[float], correct: list[bool] | None = None) -> ScoreBatch:
    n = len(total)
    return ScoreBatch(
        total=list(total),
        per_verifier={"exact": list(total)},
        correct=correct or [False] * n,
        details=[{"exact": {}} for _ in range(n)],
    )


def test_numbers_vote_by_value_and_text_by_its_form_without_whitespace() -> None:
    assert answer_key("0.5") == answer_key("1/2") == answer_key("\\frac{1}{2}") == "1/2"
    assert answer_key("50%") == "50%" and answer_key("1,000") == "1000"
    assert answer_key(" x = 2 ") == "x=2"
    assert answer_key(None) is None and answer_key("   ") is None


def test_majority_vote_rewards_the_most_frequent_answer() -> None:
    assert LABEL_FREE_REWARDS.get("majority_vote")(["4", "5", "5", "7"]) == [0.0, 1.0, 1.0, 0.0]


def test_majority_vote_tie_goes_to_the_answer_seen_first() -> None:
    assert majority_answer(["4", "5", "5", None, "4"]) == ("4", 2)
    assert LABEL_FREE_REWARDS.get("majority_vote")(["5", "4", "4", "5"]) == [1.0, 0.0, 0.0, 1.0]


def test_unparseable_answers_neither_vote_nor_win() -> None:
    # Three completions without an answer do not outvote the two that agree.
    assert LABEL_FREE_REWARDS.get("majority_vote")([None, None, "3", None, "3"]) == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_a_group_without_any_answer_gets_nothing() -> None:
    assert majority_answer([None, None]) == (None, 0)
    assert LABEL_FREE_REWARDS.get("majority_vote")([None, None]) == [0.0, 0.0]


def test_soft_consensus_is_the_share_of_the_group_with_the_same_answer() -> None:
    assert LABEL_FREE_REWARDS.get("soft_consensus")(["4", "4", "5", None]) == [0.5, 0.5, 0.25, 0.0]


@pytest.mark.parametrize(
    ("length", "expected"),
    [(5, 0.0), (12, 0.0), (13, -0.25), (14, -0.5), (16, -1.0)],  # max 16, buffer 4: penalty starts after 12
)
def test_overlong_penalty_is_linear_over_the_buffer(length: int, expected: float) -> None:
    assert overlong_penalty(length, max_length=16, buffer=4, factor=1.0) == pytest.approx(expected)


def test_overlong_penalty_factor_scales_it_and_zero_buffer_disables_it() -> None:
    assert overlong_penalty(14, 16, 4, factor=0.5) == pytest.approx(-0.25)
    assert overlong_penalty(16, 16, 0, factor=1.0) == 0.0


TEXTS = ["so 4", "it is 5", "4", "no idea", "7", "7", "8", "x"]
GROUPS = [0, 0, 0, 0, 1, 1, 1, 1]
SAMPLES = [Sample(id=str(g), prompt="p", answer=None) for g in GROUPS]


def test_majority_vote_replaces_the_verifier_reward_and_works_without_answers() -> None:
    cfg = config_from_dict(
        {"data": {"answer_field": None}, "shaping": {"label_free_reward": "majority_vote"}}
    )
    shaped = shape_scores(scores([0.0] * 8), TEXTS, [4] * 8, GROUPS, SAMPLES, cfg)
    assert shaped.scores.total == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    assert shaped.scores.per_verifier["majority_vote"] == shaped.scores.total
    assert shaped.pseudo_correct == [True, False, True, False, True, True, False, False]
    assert shaped.scores.details[0]["majority_vote"] == {"answer_key": "4", "reward": 1.0}
    # group 0: 2 of 4 agree; group 1: 2 of 4 agree. 6 of 8 completions hold a number.
    assert shaped.metrics["label_free/majority_agreement"] == pytest.approx(0.5)
    assert shaped.metrics["label_free/answered_frac"] == pytest.approx(6 / 8)
    assert "label_free/majority_correct" not in shaped.metrics  # no reference answers to check against


def test_majority_vote_add_keeps_the_verifier_reward_and_reports_pseudo_label_accuracy() -> None:
    cfg = config(label_free_reward="majority_vote", majority_vote_combine="add", majority_vote_weight=0.5)
    correct = [
        False,
        True,
        False,
        False,
        True,
        True,
        False,
        False,
    ]  # the reference of group 0 is 5, of group 1 is 7
    samples = [Sample(id=str(g), prompt="p", answer="x") for g in GROUPS]
    shaped = shape_scores(scores([float(c) for c in correct], correct), TEXTS, [4] * 8, GROUPS, samples, cfg)
    assert shaped.scores.total == [0.5, 1.0, 0.5, 0.0, 1.5, 1.5, 0.0, 0.0]
    assert shaped.pseudo_correct == correct  # 'add' keeps the verifier's notion of correct
    assert shaped.scores.correct == correct
    assert shaped.metrics["label_free/majority_correct"] == pytest.approx(
        0.5
    )  # group 1's majority (7) is right


def test_overlong_and_length_penalties_add_up_with_their_own_reward_keys() -> None:
    cfg = config(overlong_buffer=4, length_penalty=0.5)
    shaped = shape_scores(scores([1.0, 1.0, 0.0]), ["a", "b", "c"], [8, 14, 16], [0, 0, 0], SAMPLES[:3], cfg)
    # overlong: 0, -0.5, -1; length: -0.5 * 8/16, -0.5 * 14/16, -0.5 * 16/16
    assert shaped.scores.per_verifier["overlong_penalty"] == pytest.approx([0.0, -0.5, -1.0])
    assert shaped.scores.per_verifier["length_penalty"] == pytest.approx([-0.25, -0.4375, -0.5])
    assert shaped.scores.total == pytest.approx([0.75, 0.0625, -1.5])
    assert shaped.metrics["shaping/overlong_penalty_mean"] == pytest.approx(-0.5)
    assert shaped.metrics["shaping/overlong_penalized_frac"] == pytest.approx(2 / 3)
    assert shaped.metrics["shaping/length_penalty_mean"] == pytest.approx(-(0.25 + 0.4375 + 0.5) / 3)


def test_default_shaping_changes_nothing() -> None:
    before = scores([1.0, 0.0], [True, False])
    shaped = shape_scores(before, ["1", "2"], [3, 4], [0, 0], SAMPLES[:2], config())
    assert shaped.scores == before and shaped.metrics == {} and shaped.pseudo_correct == [True, False]


def test_shaping_does_not_mutate_the_verifier_scores() -> None:
    before = scores([1.0, 0.0])
    shape_scores(before, ["1", "2"], [3, 16], [0, 0], SAMPLES[:2], config(overlong_buffer=4))
    assert before.total == [1.0, 0.0] and set(before.per_verifier) == {"exact"}


def test_majority_vote_reads_answers_with_the_configured_extraction() -> None:
    cfg = config(label_free_reward="majority_vote", answer_extract="answer_tag")
    texts = ["<answer>B</answer> 1", "<answer> B </answer> 2", "<answer>C</answer> 1"]
    shaped = shape_scores(scores([0.0] * 3), texts, [4] * 3, [0, 0, 0], SAMPLES[:3], cfg)
    assert shaped.scores.total == [1.0, 1.0, 0.0]
