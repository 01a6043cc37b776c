"""Combining several verifiers' rewards for one batch (trainer/verifiers/scoring.py)."""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from trainer.errors import ConfigError, VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier, build_verifiers, score_batch
from trainer.verifiers.base import Verifier, VerifierParams, VerifierResult


class Crashing:
    name: ClassVar[str] = "crashing"
    Params: ClassVar[type[VerifierParams]] = VerifierParams

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        raise RuntimeError("scorer exploded")


class ShortChanging(Crashing):
    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return [VerifierResult(1.0, True)]


class NaNReward(Crashing):
    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return [VerifierResult(float("nan"), True, {"odd": {1: (float("inf"), object)}}) for _ in completions]


@dataclass
class Spec:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def key(self) -> str:
        return self.label or self.name


SAMPLES = [Sample("a", "2+2?", "4"), Sample("b", "3+3?", "6")]
COMPLETIONS = ["<think>easy</think><answer>4</answer>", "5"]


def exact_and_format() -> list[tuple[str, Verifier]]:
    return [
        ("exact", build_verifier("exact", {"extract": "answer_tag"})),
        ("format", build_verifier("regex_format", {})),
    ]


def test_total_is_the_weighted_sum() -> None:
    batch = score_batch(exact_and_format(), [1.0, 0.5], COMPLETIONS, SAMPLES)
    assert batch.per_verifier == {"exact": [1.0, 0.0], "format": [1.0, 0.0]}
    assert batch.total == [1.5, 0.0]


def test_correct_comes_from_the_first_verifier() -> None:
    verifiers = list(reversed(exact_and_format()))
    batch = score_batch(verifiers, [1.0, 1.0], ["<think>x</think><answer>5</answer>", "6"], SAMPLES)
    assert batch.per_verifier["exact"] == [0.0, 0.0]
    assert batch.correct == [True, False]  # the format verifier is first here


def test_details_are_keyed_by_verifier_and_json_serialisable() -> None:
    batch = score_batch(exact_and_format(), [1.0, 1.0], COMPLETIONS, SAMPLES)
    assert batch.details[0]["exact"] == {"extracted": "4", "expected": "4", "reason": "match"}
    assert set(batch.details[1]) == {"exact", "format"}
    json.dumps(batch.details, allow_nan=False)


def test_a_crashing_verifier_gives_zero_and_an_error_and_others_still_count() -> None:
    verifiers: list[tuple[str, Verifier]] = [("crash", Crashing()), *exact_and_format()]
    batch = score_batch(verifiers, [1.0, 1.0, 1.0], COMPLETIONS, SAMPLES)
    assert batch.per_verifier["crash"] == [0.0, 0.0]
    assert batch.details[0]["crash"]["error"] == "RuntimeError: scorer exploded"
    assert batch.correct == [False, False]
    assert batch.total == [2.0, 0.0]


def test_a_verifier_returning_too_few_results_gives_zero_and_an_error() -> None:
    batch = score_batch([("short", ShortChanging())], [1.0], COMPLETIONS, SAMPLES)
    assert batch.total == [0.0, 0.0]
    assert "returned 1 results for 2 completions" in batch.details[1]["short"]["error"]


def test_a_non_finite_reward_becomes_zero_with_an_error() -> None:
    batch = score_batch([("nan", NaNReward())], [1.0], COMPLETIONS, SAMPLES)
    assert batch.total == [0.0, 0.0]
    assert "non-finite reward" in batch.details[0]["nan"]["error"]


def test_an_empty_batch_scores_to_empty_lists() -> None:
    batch = score_batch(exact_and_format(), [1.0, 1.0], [], [])
    assert (batch.total, batch.correct, batch.details) == ([], [], [])
    assert batch.per_verifier == {"exact": [], "format": []}


def test_mismatched_weights_are_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="one weight per verifier"):
        score_batch(exact_and_format(), [1.0], COMPLETIONS, SAMPLES)


def test_build_verifiers_keys_by_label_in_order() -> None:
    built = build_verifiers([Spec("exact"), Spec("numeric", {"abs_tol": 0.1}, label="close")])
    assert [key for key, _ in built] == ["exact", "close"]


def test_build_verifiers_refuses_duplicate_keys() -> None:
    with pytest.raises(VerifierError, match="distinct label"):
        build_verifiers([Spec("exact"), Spec("exact")])


def test_build_verifiers_passes_on_bad_params_and_unknown_names() -> None:
    with pytest.raises(VerifierError, match="abs_tol"):
        build_verifiers([Spec("numeric", {"abs_tol": "wide"})])
    with pytest.raises(ConfigError, match="valid names are"):
        build_verifiers([Spec("exactly")])
