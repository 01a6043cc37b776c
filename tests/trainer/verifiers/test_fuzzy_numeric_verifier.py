"""The graded (FGRPR-style) numeric verifier: reward = max(0, 1 - |a-b| / (scale * max(|b|, floor)))."""

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier


def score(completion: str, answer: str, **params: object) -> tuple[float, bool]:
    result = build_verifier("fuzzy_numeric", dict(params))([completion], [Sample("s1", "q", answer)])[0]
    return result.reward, result.correct


def test_it_gives_full_reward_to_an_exact_answer() -> None:
    assert score("there are 40 people", "40") == (1.0, True)


def test_it_decays_linearly_with_relative_error() -> None:
    reward, correct = score("36", "40")  # 1 - 4/40
    assert reward == pytest.approx(0.9)
    assert correct is False


def test_it_gives_zero_past_the_scale() -> None:
    assert score("100", "40") == (0.0, False)


def test_a_larger_scale_is_more_lenient() -> None:
    assert score("20", "40", scale=2.0)[0] == pytest.approx(0.75)  # 1 - 20/(2*40)


def test_small_counts_decay_relative_to_the_reference() -> None:
    assert score("1", "0")[0] == 0.0  # a reference of 0: 1 - 1/(1*floor) < 0
    assert score("4", "3")[0] == pytest.approx(2 / 3)


def test_it_is_correct_only_within_tolerance() -> None:
    assert score("40.5", "40", abs_tol=1.0) == (1.0, True)


def test_it_stays_finite_for_huge_numbers() -> None:
    reward, _ = score("1" + "0" * 400, "1")
    assert reward == 0.0


def test_it_gives_zero_without_a_number() -> None:
    assert score("many", "40") == (0.0, False)


def test_it_refuses_a_non_positive_scale() -> None:
    with pytest.raises(VerifierError, match="scale"):
        build_verifier("fuzzy_numeric", {"scale": 0})
