"""The numeric tolerance verifier and its number parser."""

from fractions import Fraction

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier
from trainer.verifiers.numeric import parse_number


def score(completion: str, answer: str | None, **params: object) -> tuple[float, bool, dict]:
    result = build_verifier("numeric", dict(params))([completion], [Sample("s1", "q", answer)])[0]
    return result.reward, result.correct, result.detail


def test_it_accepts_the_last_number_of_a_completion() -> None:
    reward, correct, detail = score("3 + 4 = 7, so the answer is 7.", "7")
    assert (reward, correct) == (1.0, True)
    assert detail["extracted"] == "7"
    assert detail["reason"] == "within tolerance"


def test_it_rejects_a_wrong_number_and_says_by_how_much() -> None:
    reward, correct, detail = score("the answer is 8", "7")
    assert (reward, correct) == (0.0, False)
    assert detail["reason"] == "off by 1"


def test_it_matches_thousands_separators_against_a_plain_reference() -> None:
    assert score("total: $1,234,567", "1234567")[0] == 1.0


def test_it_matches_a_decimal_against_a_fraction() -> None:
    assert score("half, i.e. 0.5", "1/2")[0] == 1.0
    assert score(r"$\frac{1}{2}$", "0.5")[0] == 1.0


def test_it_matches_scientific_notation() -> None:
    assert score("1.5e3", "1500")[0] == 1.0


def test_it_handles_negative_numbers() -> None:
    assert score("the result is -42", "-42")[0] == 1.0
    assert score("the result is 42", "-42")[0] == 0.0


def test_it_compares_huge_integers_exactly() -> None:
    big = "123456789012345678901234567890"
    assert score(f"it is {big}", big)[0] == 1.0
    assert score(f"it is {big[:-1]}1", big)[0] == 0.0


def test_it_uses_the_absolute_tolerance() -> None:
    assert score("0.333333", "1/3", abs_tol=1e-5)[0] == 1.0
    assert score("0.333", "1/3", abs_tol=1e-5)[0] == 0.0


def test_it_uses_the_relative_tolerance() -> None:
    assert score("10001", "10000", rel_tol=1e-3)[0] == 1.0
    assert score("10001", "10000")[0] == 0.0


def test_it_strips_a_percent_sign_by_default() -> None:
    assert score("an increase of 25%", "25")[0] == 1.0


def test_it_reads_percent_as_a_fraction_when_asked() -> None:
    assert score("an increase of 25%", "0.25", percent="fraction")[0] == 1.0
    assert score("an increase of 25%", "25", percent="fraction")[0] == 0.0


def test_it_accepts_either_percent_reading_when_asked() -> None:
    assert score("25%", "0.25", percent="either")[0] == 1.0
    assert score("25%", "25", percent="either")[0] == 1.0


def test_it_gives_zero_when_there_is_no_number() -> None:
    reward, _, detail = score("I do not know", "7")
    assert reward == 0.0
    assert detail["reason"] == "no number in completion"


def test_it_gives_zero_for_an_empty_completion() -> None:
    assert score("", "7")[0] == 0.0


def test_it_reports_a_reference_that_is_not_a_number() -> None:
    reward, _, detail = score("7", "seven")
    assert reward == 0.0
    assert "is not a number" in detail["error"]


def test_it_reports_a_missing_reference() -> None:
    assert "no reference answer" in score("7", None)[2]["error"]


def test_it_refuses_a_negative_tolerance() -> None:
    with pytest.raises(VerifierError, match="abs_tol"):
        build_verifier("numeric", {"abs_tol": -1})


def test_parse_number_refuses_an_absurd_exponent_instead_of_hanging() -> None:
    assert parse_number("1e999999999") is None


def test_parse_number_reads_latex_percent_and_dollars() -> None:
    assert parse_number(r"$50\%$") == (Fraction(50), True)


def test_parse_number_refuses_division_by_zero_and_text() -> None:
    assert parse_number("1/0") is None
    assert parse_number("12 apples") is None
    assert parse_number("1,23") is None
