"""numeric and fuzzy_numeric on references below 1 in magnitude, 0 included.

The fuzzy reward used to divide the error by max(|reference|, 1), so every reference below 1 was measured
in absolute units (0.002 for 0.001 scored 0.999), and the flat default abs_tol of 1e-6 accepted any answer
within 1e-6 of a reference of 1e-9.
"""

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier


def score(name: str, completion: str, answer: str, **params: object) -> tuple[float, bool]:
    result = build_verifier(name, dict(params))([completion], [Sample("s1", "q", answer)])[0]
    return result.reward, result.correct


def test_a_wrong_answer_to_a_reference_below_one_gets_partial_reward_relative_to_it() -> None:
    reward, correct = score("fuzzy_numeric", "0.9", "0.5")
    assert reward == pytest.approx(0.2)  # 1 - 0.4/0.5
    assert correct is False


def test_doubling_a_small_reference_gets_no_reward() -> None:
    assert score("fuzzy_numeric", "0.002", "0.001") == (0.0, False)


def test_a_close_answer_to_a_small_reference_keeps_most_of_the_reward() -> None:
    assert score("fuzzy_numeric", "0.0011", "0.001")[0] == pytest.approx(0.9)


def test_a_reference_of_zero_is_scored_right_or_wrong_by_default() -> None:
    assert score("fuzzy_numeric", "0", "0") == (1.0, True)
    assert score("fuzzy_numeric", "0.0000005", "0") == (1.0, True)  # within abs_tol
    assert score("fuzzy_numeric", "0.001", "0") == (0.0, False)
    assert score("fuzzy_numeric", "0.5", "0") == (0.0, False)


def test_the_floor_sets_the_scale_for_a_reference_of_zero() -> None:
    assert score("fuzzy_numeric", "0.0005", "0", floor=0.001)[0] == pytest.approx(0.5)


def test_the_default_tolerance_does_not_swamp_a_tiny_reference() -> None:
    assert score("numeric", "2e-9", "1e-9") == (0.0, False)
    assert score("fuzzy_numeric", "2e-9", "1e-9") == (0.0, False)
    assert score("numeric", "1e-9", "1e-9") == (1.0, True)


def test_an_explicit_absolute_tolerance_is_used_as_given() -> None:
    assert score("numeric", "0.0015", "0.001", abs_tol=0.001) == (1.0, True)
    assert score("fuzzy_numeric", "40.5", "40", abs_tol=1.0) == (1.0, True)


def test_large_references_keep_the_small_default_tolerance() -> None:
    assert score("numeric", "1000000.0000005", "1000000") == (1.0, True)
    assert score("numeric", "1000001", "1000000") == (0.0, False)


def test_it_refuses_a_non_positive_floor() -> None:
    with pytest.raises(VerifierError, match="floor"):
        build_verifier("fuzzy_numeric", {"floor": 0})
