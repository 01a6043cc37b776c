"""Scientific notation is read as a whole number (2e5 is 200000, never 2) by every number-reading verifier.

math-verify reads a plain ``2e5`` as 2 and ``\\boxed{2e5}`` as 2*e*5 (Euler's number); the last-number
extraction read ``2 \\times 10^5`` as 5.
"""

import pytest

from trainer.samples import Sample
from trainer.verifiers import build_verifier
from trainer.verifiers.extract import extract_last_number
from trainer.verifiers.numeric import parse_number

WRITTEN = [
    ("2e5", "2e5"),
    ("2E5", "2E5"),
    ("so it is 1.5e-3.", "1.5e-3"),
    (r"$2 \times 10^5$", "2e5"),
    (r"2\cdot10^{5}", "2e5"),
    ("2×10^5", "2e5"),
    ("1.5 x 10^-3", "1.5e-3"),
    ("-3 * 10**2 apples", "-3e2"),
    (r"about $10^{6}$", "1e6"),
]


@pytest.mark.parametrize(("text", "number"), WRITTEN)
def test_the_last_number_takes_the_exponent(text: str, number: str) -> None:
    assert extract_last_number(text).value == number


@pytest.mark.parametrize(
    ("text", "value"),
    [("2 \\times 10^{5}", 200000), ("1.5e-3", 0.0015), ("2E5", 200000), ("-2\\cdot 10^{-2}", -0.02)],
)
def test_a_reference_in_scientific_notation_parses_whole(text: str, value: float) -> None:
    parsed = parse_number(text)
    assert parsed is not None
    assert float(parsed[0]) == pytest.approx(value)


@pytest.mark.parametrize("verifier", ["numeric", "fuzzy_numeric"])
@pytest.mark.parametrize(
    ("completion", "reference", "reward"),
    [
        ("2e5", "200000", 1.0),
        ("2e5", "2", 0.0),
        (r"so $2 \times 10^5$", "200000", 1.0),
        ("1.5e-3", "0.0015", 1.0),
    ],
)
def test_numeric_verifiers_score_scientific_answers(
    verifier: str, completion: str, reference: str, reward: float
) -> None:
    (result,) = build_verifier(verifier, {})([completion], [Sample("s", "q", reference)])
    assert result.reward == reward


def test_math_reads_scientific_notation_whole() -> None:
    cases = [
        ("2e5", "200000", 1.0),
        ("2e5", "2", 0.0),
        ("1.5e-3", "0.0015", 1.0),
        (r"$2 \times 10^5$", "200000", 1.0),
        (r"$2\cdot10^{5}$", "200000", 1.0),
        ("2E5", "200000", 1.0),
        (r"\boxed{2e5}", "200000", 1.0),
        ("The answer is 2e5", "2", 0.0),
        ("-300", "-3e2", 1.0),
    ]
    results = build_verifier("math", {})(
        [c for c, _, _ in cases], [Sample(f"s{i}", "q", a) for i, (_, a, _) in enumerate(cases)]
    )
    assert [r.reward for r in results] == [want for _, _, want in cases]
