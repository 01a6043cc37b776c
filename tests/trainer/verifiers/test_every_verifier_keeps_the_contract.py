"""Contract tests run against every registered verifier: never raise, one result per input, clear errors."""

import json
from typing import Any

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import VERIFIERS, build_verifier
from trainer.verifiers.base import VerifierParams

EXPECTED = {"exact", "numeric", "fuzzy_numeric", "regex_format", "math", "reasoning_gym", "chain_arithmetic"}
RG_ENTRY: dict[str, Any] = {
    "question": "1+1?",
    "answer": "2",
    "metadata": {"source_dataset": "basic_arithmetic"},
}
AWKWARD = [
    "",
    "   \n\t",
    "2",
    "ünïcödé ∑ 😀 answer: 2",
    "9" * 5000,
    r"\boxed{" * 50,
    "<answer></answer>",
]


def test_all_verifiers_are_registered() -> None:
    assert set(VERIFIERS.names()) >= EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_scores_awkward_completions_without_raising(name: str) -> None:
    samples = [
        Sample(f"s{i}", "q", "2", {"entry": RG_ENTRY, "task": "basic_arithmetic"})
        for i in range(len(AWKWARD))
    ]
    results = build_verifier(name, {})(AWKWARD, samples)
    assert len(results) == len(AWKWARD)
    for result in results:
        assert 0.0 <= result.reward <= 1.0
        json.dumps(result.detail, allow_nan=False)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_tolerates_a_missing_reference(name: str) -> None:
    (result,) = build_verifier(name, {})(["2"], [Sample("s", "q", None)])
    assert isinstance(result.reward, float)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_returns_errors_for_mismatched_lengths(name: str) -> None:
    results = build_verifier(name, {})(["2", "3"], [Sample("s", "q", "2")])
    assert len(results) == 2
    assert all("error" in r.detail for r in results)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_returns_nothing_for_an_empty_batch(name: str) -> None:
    assert build_verifier(name, {})([], []) == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_refuses_an_unknown_param_with_the_param_name(name: str) -> None:
    with pytest.raises(VerifierError, match="no_such_param"):
        build_verifier(name, {"no_such_param": 1})


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_its_params_are_documented(name: str) -> None:
    params: type[VerifierParams] = VERIFIERS.get(name).Params
    assert params.model_fields
    for field_name, info in params.model_fields.items():
        assert info.description, f"{name}.{field_name} has no description"
    assert VERIFIERS.get(name).__doc__
