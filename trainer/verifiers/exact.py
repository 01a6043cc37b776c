"""``exact``: the extracted answer equals the reference answer after light normalisation.

The plain exact-match reward of most RLVR recipes (e.g. TRL's and verl's GSM8K examples compare the parsed
answer string with the label). It differs in two ways: both sides go through the same normalisation
(Unicode NFC, strip, optional whitespace collapse and case folding), and a trailing period is ignored by
default, because shared/seeds 001:L43 finds that "a trailing period or newline dominates" the false
negatives of string-matching verifiers.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from trainer.samples import Sample
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult, error_result, score_each, shown
from trainer.verifiers.extract import ExtractMode, ExtractParams

_TRAILING = ".。!！"


class ExactParams(ExtractParams):
    extract: ExtractMode = Field(
        "first_line",
        description="Which part of the completion is the answer (see extract.py): full, first_line, boxed, "
        "last_number, regex or answer_tag.",
    )
    case_sensitive: bool = Field(
        True, description="Compare case-sensitively; false compares casefolded text."
    )
    collapse_whitespace: bool = Field(True, description="Treat any run of whitespace as one space.")
    ignore_trailing_period: bool = Field(
        True,
        description="Ignore a trailing full stop or exclamation mark, ASCII or CJK full-width, on both sides "
        "(the commonest false negative).",
    )


def normalise_text(
    text: str, case_sensitive: bool, collapse_whitespace: bool, ignore_trailing_period: bool
) -> str:
    """The normal form compared by ``exact``."""
    text = unicodedata.normalize("NFC", text).strip()
    if collapse_whitespace:
        text = " ".join(text.split())
    if ignore_trailing_period:
        text = text.rstrip(_TRAILING).rstrip()
    return text if case_sensitive else text.casefold()


@VERIFIERS.register("exact")
class ExactVerifier:
    """Reward 1 when the extracted answer equals ``sample.answer`` after normalisation, else 0.

    >>> v = ExactVerifier(ExactParams())
    >>> [r.reward for r in v(["42\\nbecause...", "41"], [Sample("a", "6*7?", "42")] * 2)]
    [1.0, 0.0]
    """

    name: ClassVar[str] = "exact"
    Params: ClassVar[type[VerifierParams]] = ExactParams

    def __init__(self, params: ExactParams) -> None:
        self.params = params
        self._extract = params.extractor()

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_each(completions, samples, self._score_one)

    def _normalise(self, text: str) -> str:
        p = self.params
        return normalise_text(text, p.case_sensitive, p.collapse_whitespace, p.ignore_trailing_period)

    def _score_one(self, completion: str, sample: Sample) -> VerifierResult:
        if sample.answer is None:
            return error_result(
                f"sample {sample.id!r} has no reference answer; exact needs one",
                extracted=None,
                expected=None,
            )
        found = self._extract(completion)
        detail = {"extracted": shown(found.value), "expected": shown(sample.answer)}
        if found.value is None:
            return VerifierResult(0.0, False, {**detail, "reason": found.reason})
        correct = self._normalise(found.value) == self._normalise(sample.answer)
        return VerifierResult(
            float(correct), correct, {**detail, "reason": "match" if correct else "mismatch"}
        )
