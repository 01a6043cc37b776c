"""The regex format verifier (format reward)."""

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier


def score(completion: str, **params: object) -> tuple[float, bool]:
    result = build_verifier("regex_format", dict(params))([completion], [Sample("s1", "q", None)])[0]
    return result.reward, result.correct


def test_it_accepts_think_then_answer_by_default() -> None:
    assert score("<think>\n2+2 is 4\n</think>\n<answer>4</answer>\n") == (1.0, True)


def test_it_rejects_text_after_the_answer_with_fullmatch() -> None:
    assert score("<think>x</think><answer>4</answer> and more") == (0.0, False)


def test_search_mode_finds_the_pattern_anywhere() -> None:
    assert score("blah <answer>4</answer> blah", pattern=r"<answer>\d+</answer>", match="search") == (
        1.0,
        True,
    )


def test_it_rejects_a_missing_think_block() -> None:
    assert score("<answer>4</answer>") == (0.0, False)


def test_it_honours_ignore_case() -> None:
    assert score("<THINK>x</THINK><ANSWER>4</ANSWER>", ignore_case=True)[0] == 1.0
    assert score("<THINK>x</THINK><ANSWER>4</ANSWER>")[0] == 0.0


def test_dotall_off_stops_dot_at_newlines() -> None:
    assert score("<think>a\nb</think><answer>4</answer>", dotall=False)[0] == 0.0


def test_it_gives_zero_for_an_empty_completion() -> None:
    assert score("") == (0.0, False)


def test_it_works_without_a_reference_answer() -> None:
    assert score("<think>é</think><answer>ünï</answer>")[0] == 1.0


def test_it_refuses_a_malformed_pattern() -> None:
    with pytest.raises(VerifierError, match="not a valid regular expression"):
        build_verifier("regex_format", {"pattern": "(<think>"})


def test_it_refuses_an_unknown_match_rule() -> None:
    with pytest.raises(VerifierError, match="match"):
        build_verifier("regex_format", {"match": "prefix"})
