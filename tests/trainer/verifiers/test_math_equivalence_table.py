"""The math verifier on tests/data/math_equivalence.jsonl: forms raw math-verify misses, and ones to reject.

Raw math-verify gets 14 of the 47 rows right (benchmarks/math_verifier_vs_math_verify.py prints both).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from trainer.samples import Sample
from trainer.verifiers import build_verifier
from trainer.verifiers.base import VerifierResult
from trainer.verifiers.math_answer import parse_choices, pick_choice

TABLE = Path(__file__).resolve().parents[2] / "data" / "math_equivalence.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]
OPTIONS = {"A": "Paris", "B": "London", "C": "Berlin", "D": "Rome"}


@pytest.fixture(scope="module")
def verdicts() -> list[VerifierResult]:
    samples = [
        Sample(f"row-{i}", "q", row["reference"], {"choices": row["choices"]} if "choices" in row else {})
        for i, row in enumerate(ROWS)
    ]
    return build_verifier("math", {})([row["completion"] for row in ROWS], samples)


@pytest.mark.parametrize("index", range(len(ROWS)), ids=[f"{r['kind']}: {r['completion']}" for r in ROWS])
def test_each_row_of_the_table_gets_its_expected_verdict(verdicts: list[VerifierResult], index: int) -> None:
    result = verdicts[index]
    assert "error" not in result.detail
    assert result.correct is ROWS[index]["equivalent"], result.detail


def test_the_sympy_fallback_can_be_switched_off() -> None:
    verifier = build_verifier("math", {"sympy_fallback": False})
    (result,) = verifier([r"$\sin 60^\circ$"], [Sample("s", "q", r"\frac{\sqrt{3}}{2}")])
    assert result.correct is False


def test_a_wrong_answer_stays_wrong_after_the_fallback() -> None:
    verifier = build_verifier("math", {})
    cases = [(r"$\sin 60^\circ$", "1"), ("The answer is sqrt(8)", "3"), (r"$0.\overline{3}$", "0.3")]
    results = verifier([c for c, _ in cases], [Sample(f"s{i}", "q", a) for i, (_, a) in enumerate(cases)])
    assert [r.correct for r in results] == [False, False, False]


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("The answer is (B)", "B"),
        ("B) 42", "B"),
        ("I choose option C", "C"),
        ("the correct option is 'Paris'", "A"),
        (r"so \boxed{D}", "D"),
        ("Answer: C", "C"),
        ("I think it is London.", "B"),
        ("the answer is Berlin, not Paris", "C"),
        ("A good start: the answer is (D)", "D"),
        ("no idea", None),
    ],
)
def test_the_chosen_option_is_read_from_a_sentence(answer: str, letter: str | None) -> None:
    assert pick_choice(answer, OPTIONS) == letter


@pytest.mark.parametrize(
    "value",
    [
        ["Paris", "London"],
        {"A": "Paris", "B": "London"},
        {"(a)": "Paris", "(b)": "London"},
        "A) Paris\nB) London",
    ],
)
def test_options_are_read_from_a_list_a_mapping_or_text(value: object) -> None:
    assert parse_choices(value) == {"A": "Paris", "B": "London"}


def test_a_letter_reference_without_options_takes_only_an_explicit_statement_of_that_letter() -> None:
    verifier = build_verifier("math", {})
    answers = ["The answer is (B)", "I choose (B) but the answer is C", r"\boxed{B}", "(B) is wrong, A"]
    results = verifier(answers, [Sample(f"s{i}", "q", "B") for i in range(len(answers))])
    assert [r.correct for r in results] == [True, False, True, False]


def test_the_choices_field_is_configurable() -> None:
    sample = Sample("s", "q", "B", {"options": ["1", "2", "3"]})
    answer = ["the correct option is '2'"]  # names the option by its text, so only the options can read it
    assert build_verifier("math", {"choices_field": "options"})(answer, [sample])[0].correct
    assert not build_verifier("math", {})(answer, [sample])[0].correct


def test_an_answer_that_names_another_option_is_still_checked_by_math_verify() -> None:
    sample = Sample("s", "q", "3", {"choices": ["1", "2", "3", "4"]})
    (result,) = build_verifier("math", {})([r"\boxed{6/2}"], [sample])
    assert result.correct is True
