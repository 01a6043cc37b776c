"""The exact-match verifier."""

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier


def sample(answer: str | None) -> Sample:
    return Sample(id="s1", prompt="question?", answer=answer)


def score(completion: str, answer: str | None, **params: object) -> tuple[float, bool, dict]:
    result = build_verifier("exact", dict(params))([completion], [sample(answer)])[0]
    return result.reward, result.correct, result.detail


def test_it_accepts_answer_on_first_line() -> None:
    reward, correct, detail = score("Paris\nbecause it is the capital.", "Paris")
    assert (reward, correct) == (1.0, True)
    assert detail == {"extracted": "Paris", "expected": "Paris", "reason": "match"}


def test_it_rejects_a_different_answer() -> None:
    reward, correct, detail = score("Lyon", "Paris")
    assert (reward, correct, detail["reason"]) == (0.0, False, "mismatch")


def test_it_is_case_sensitive_by_default() -> None:
    assert score("paris", "Paris")[0] == 0.0


def test_it_ignores_case_when_asked() -> None:
    assert score("PARIS", "paris", case_sensitive=False)[0] == 1.0


def test_it_collapses_inner_whitespace() -> None:
    assert score("New   York", "New York")[0] == 1.0


def test_it_keeps_whitespace_when_collapse_is_off() -> None:
    assert score("New   York", "New York", collapse_whitespace=False)[0] == 0.0


def test_it_ignores_a_trailing_period_by_default() -> None:
    assert score("42.", "42")[0] == 1.0
    assert score("42.", "42", ignore_trailing_period=False)[0] == 0.0


def test_it_treats_composed_and_decomposed_unicode_as_equal() -> None:
    assert score("cafe\u0301", "caf\u00e9")[0] == 1.0


def test_it_compares_unicode_case_insensitively() -> None:
    assert score("STRASSE", "straße", case_sensitive=False)[0] == 1.0


def test_it_uses_the_extract_mode() -> None:
    assert score(r"so \boxed{7}", "7", extract="boxed")[0] == 1.0
    assert score("I think 1,234", "1234", extract="last_number")[0] == 1.0


def test_it_gives_zero_for_an_empty_completion() -> None:
    reward, correct, detail = score("", "Paris")
    assert (reward, correct) == (0.0, False)
    assert detail["reason"] == "empty completion"
    assert "error" not in detail


def test_it_reports_an_error_when_the_reference_is_missing() -> None:
    reward, correct, detail = score("Paris", None)
    assert (reward, correct) == (0.0, False)
    assert "no reference answer" in detail["error"]


def test_it_refuses_an_unknown_param() -> None:
    with pytest.raises(VerifierError, match="case_insensitive"):
        build_verifier("exact", {"case_insensitive": True})


def test_it_refuses_a_malformed_regex() -> None:
    with pytest.raises(VerifierError, match="not a valid regular expression"):
        build_verifier("exact", {"extract": "regex", "pattern": "[a-"})


def test_it_refuses_an_unknown_extract_mode() -> None:
    with pytest.raises(VerifierError, match="extract"):
        build_verifier("exact", {"extract": "last_word"})


def test_it_caps_a_long_extracted_answer_in_the_detail() -> None:
    reward, _, detail = score("x" * 10_000, "x" * 10_000, extract="full")
    assert reward == 1.0
    assert len(detail["extracted"]) == 300
