"""The math-verify verifier; every call goes through the timeout pool's worker processes."""

import time

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier
from trainer.verifiers.base import VerifierResult


def score_all(pairs: list[tuple[str, str | None]], **params: object) -> list[VerifierResult]:
    verifier = build_verifier("math", dict(params))
    return verifier([c for c, _ in pairs], [Sample(f"s{i}", "q", a) for i, (_, a) in enumerate(pairs)])


def test_it_scores_a_batch_of_equivalent_and_wrong_answers() -> None:
    cases = [
        (r"so $x = \frac{1}{2}$", "0.5", 1.0),
        ("The answer is 0.5", r"\frac{1}{2}", 1.0),
        (r"Hence \boxed{3}.", "3", 1.0),
        (r"Hence \boxed{4}.", "3", 0.0),
        (r"The set is $\{2, 1\}$", r"\{1,2\}", 1.0),
        (r"so $x \in [1, 3)$, i.e. \boxed{[1,3)}", "[1,3)", 1.0),
        (r"\boxed{[1,3]}", "[1,3)", 0.0),
        (r"\boxed{(0,1]}", "(0, 1]", 1.0),
        (r"\boxed{\sqrt{2}/2}", r"\frac{\sqrt{2}}{2}", 1.0),
    ]
    results = score_all([(c, a) for c, a, _ in cases])
    assert [r.reward for r in results] == [want for _, _, want in cases]
    assert [r.correct for r in results] == [want == 1.0 for _, _, want in cases]


def test_its_detail_shows_what_was_extracted_and_expected() -> None:
    (result,) = score_all([(r"Hence \boxed{3}.", "3")])
    assert result.detail == {"extracted": "3", "expected": "3", "reason": "equivalent"}


def test_it_gives_zero_for_an_empty_completion() -> None:
    (result,) = score_all([("", "3")])
    assert (result.reward, result.detail["reason"]) == (0.0, "empty completion")


def test_it_gives_zero_when_no_answer_can_be_parsed() -> None:
    (result,) = score_all([("I have no idea.", "3")])
    assert result.reward == 0.0
    assert "error" not in result.detail


def test_it_reports_a_missing_reference() -> None:
    (result,) = score_all([(r"\boxed{3}", None)])
    assert "no reference answer" in result.detail["error"]


def test_it_reports_a_reference_math_verify_cannot_parse() -> None:
    (result,) = score_all([(r"\boxed{3}", "")])
    assert "could not parse the reference" in result.detail["error"]


def test_it_can_take_the_answer_from_an_answer_tag() -> None:
    (result,) = score_all(
        [(r"<think>maybe \boxed{2}</think><answer>(0, 1]</answer>", "(0, 1]")], extract="answer_tag"
    )
    assert result.reward == 1.0


def test_it_times_out_a_pathological_answer_and_recovers() -> None:
    started = time.monotonic()
    hang, ok = score_all([(r"\boxed{9^{9^{9^{9}}}}", "3"), (r"\boxed{3}", "3")], timeout_s=1)
    assert time.monotonic() - started < 15
    assert hang.reward == 0.0
    assert hang.detail["error"] == "timed out after 1 s"
    assert ok.reward == 1.0


def test_it_refuses_a_non_positive_timeout() -> None:
    with pytest.raises(VerifierError, match="timeout_s"):
        build_verifier("math", {"timeout_s": 0})
