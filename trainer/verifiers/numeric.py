"""``numeric`` and ``fuzzy_numeric``: compare the extracted answer with the reference as numbers.

Numbers are parsed exactly (``fractions.Fraction``), so huge integers and long decimals compare without
float rounding or overflow: ``1234567890123456789`` differs from ``...788``. Accepted forms: integers,
decimals, ``1,234`` thousands separators, fractions ``a/b`` and ``\\frac{a}{b}``, scientific notation
(``1.5e-3``, ``2E5``, ``2 \\times 10^{5}``, ``2\\cdot10^5``, ``2×10^5``: the exponent is always read, so
``2e5`` is 200000, never 2), a leading ``+``/``-``/``−``, surrounding ``$``, and a trailing ``%`` read as
set by ``percent``.

The default absolute tolerance (``abs_tol`` unset) is 1e-6 but never more than 0.1% of a nonzero reference
(``_ABS_TOL_SHARE``): a flat 1e-6 would make a reference of 1e-9 accept 2e-9, or any answer below 1e-6. An
``abs_tol`` that is set explicitly is used as given.

``numeric`` is the tolerance check of the "relative-tolerance numeric cascade" in shared/seeds 001:L43. That
paper shows a relative tolerance accepts off-by-one answers once numbers are large (100% acceptance at or
above 10^4 for its τ), so here the default relative tolerance is 0 and only a small absolute one is used.

``fuzzy_numeric`` follows FGRPR (shared/seeds 004:L3), which replaces the 0/1 accuracy reward with one that
"assigns higher rewards to closer approximations". The abstract gives no formula; this one is linear in the
scaled error and reaches 0 at an error of ``scale`` times the reference's magnitude::

    reward = 1                                              if the answer is correct (within tolerance)
    reward = max(0, 1 - |a - b| / (scale * max(|b|, floor)))   otherwise

The error is relative to the reference (for b = 3, answering 4 gives 1 - 1/3 ≈ 0.67 with scale 1; for
b = 0.5, answering 0.9 gives 0.2; for b = 0.001, answering 0.002 gives 0). ``floor`` (default 1e-9) keeps
the reward defined for a reference of 0, where a relative error is not: answers within ``abs_tol`` of 0
score 1 and the reward of others reaches 0 at an error of ``scale * floor``, so with the defaults a reference
of 0 is scored right or wrong. References smaller than ``floor`` are measured against it: lower it for data
with tinier numbers. An earlier version used ``max(|b|, 1)``, which swamped every reference below 1: 0.002
for 0.001 scored 0.999.
``correct`` stays strict: only answers within tolerance count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar, Literal

from pydantic import Field

from trainer.samples import Sample
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult, error_result, score_each, shown
from trainer.verifiers.extract import ExtractMode, ExtractParams, normalize_scientific

PercentMode = Literal["strip", "fraction", "either"]

_DECIMAL_RE = re.compile(
    r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+]?\.\d+(?:[eE][-+]?\d+)?"
)
_LATEX_FRAC_RE = re.compile(r"(-?)\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}")
_MAX_EXPONENT = 1000  # "1e999999999" would build a billion-digit integer: refuse it instead
_DEFAULT_ABS_TOL = Fraction(1, 10**6)
_ABS_TOL_SHARE = Fraction(1, 1000)  # the default abs_tol is capped at this share of a nonzero reference


def parse_number(text: str) -> tuple[Fraction, bool] | None:
    """``(value, had_percent_sign)`` or None when ``text`` is not a single number.

    >>> parse_number("-1,234.5")
    (Fraction(-2469, 2), False)
    >>> parse_number("\\\\frac{3}{4}")
    (Fraction(3, 4), False)
    """
    s = text.strip().strip("$").strip().replace("−", "-").replace("\\!", "").replace("\\,", "")
    s = s.rstrip(".").strip()
    percent = s.endswith("%")
    if percent:
        s = s.removesuffix("%").removesuffix("\\").strip()
    s = normalize_scientific(s)  # "2 \\times 10^{5}" -> "2e5"
    latex = _LATEX_FRAC_RE.fullmatch(s)
    if latex:
        s = f"{latex.group(1)}{latex.group(2)}/{latex.group(3)}"
    parts = [p.strip() for p in s.split("/")]
    if len(parts) > 2:
        return None
    values = [_parse_decimal(p) for p in parts]
    if any(v is None for v in values):
        return None
    if len(values) == 2:
        numerator, denominator = values
        assert numerator is not None and denominator is not None
        if denominator == 0:
            return None
        return numerator / denominator, percent
    assert values[0] is not None
    return values[0], percent


def _parse_decimal(s: str) -> Fraction | None:
    if not _DECIMAL_RE.fullmatch(s):
        return None
    mantissa, _, exponent = s.lower().partition("e")
    if exponent and abs(int(exponent)) > _MAX_EXPONENT:
        return None
    try:
        return Fraction(mantissa.replace(",", "")) * (Fraction(10) ** int(exponent or 0))
    except (ValueError, ZeroDivisionError):  # e.g. more digits than int() accepts
        return None


def candidates(value: Fraction, had_percent: bool, percent: PercentMode) -> list[Fraction]:
    """The values a number may stand for: ``50%`` is 50 (strip), 0.5 (fraction), or both (either)."""
    if not had_percent or percent == "strip":
        return [value]
    if percent == "fraction":
        return [value / 100]
    return [value, value / 100]


class NumericParams(ExtractParams):
    extract: ExtractMode = Field(
        "last_number",
        description="Which part of the completion is the answer (see extract.py); default: the last number.",
    )
    abs_tol: float | None = Field(
        None,
        ge=0,
        le=1e12,
        description="Correct if |answer - reference| <= abs_tol. Unset: 1e-6, capped at 0.1% of a nonzero "
        "|reference| so that a small reference is not swamped (1e-9 does not accept 2e-9).",
    )
    rel_tol: float = Field(
        0.0,
        ge=0,
        le=1e6,
        description="Also correct if |answer - reference| <= rel_tol * |reference|. Beware: a relative "
        "tolerance accepts off-by-one answers for large numbers.",
    )
    percent: PercentMode = Field(
        "strip",
        description="How to read 'x%' (in answer and reference): strip (50% = 50), fraction (50% = 0.5), "
        "either (both readings are tried).",
    )


def _closest(answer: list[Fraction], reference: list[Fraction]) -> tuple[Fraction, Fraction]:
    """The (answer, reference) reading pair with the smallest relative error."""

    def relative_error(pair: tuple[Fraction, Fraction]) -> Fraction:
        a, b = pair
        return abs(a - b) / max(abs(b), Fraction(1))

    return min(((a, b) for a in answer for b in reference), key=relative_error)


class _NumericBase:
    """Shared parsing and detail building; subclasses turn (answer, reference) into a reward."""

    params: NumericParams

    def __init__(self, params: NumericParams) -> None:
        self.params = params
        self._extract = params.extractor()

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_each(completions, samples, self._score_one)

    def _within_tolerance(self, a: Fraction, b: Fraction) -> bool:
        error = abs(a - b)
        if self.params.abs_tol is not None:
            abs_tol = Fraction(self.params.abs_tol)
        else:
            abs_tol = _DEFAULT_ABS_TOL if b == 0 else min(_DEFAULT_ABS_TOL, _ABS_TOL_SHARE * abs(b))
        return error <= abs_tol or error <= Fraction(self.params.rel_tol) * abs(b)

    def _reward(self, a: Fraction, b: Fraction, correct: bool) -> float:
        raise NotImplementedError

    def _score_one(self, completion: str, sample: Sample) -> VerifierResult:
        if sample.answer is None:
            return error_result(f"sample {sample.id!r} has no reference answer; numeric verifiers need one")
        reference = parse_number(sample.answer)
        if reference is None:
            return error_result(
                f"reference answer {sample.answer[:80]!r} of sample {sample.id!r} is not a number; use the "
                "exact or math verifier for this data",
                expected=shown(sample.answer),
            )
        found = self._extract(completion)
        detail: dict[str, Any] = {"extracted": shown(found.value), "expected": shown(sample.answer)}
        if found.value is None:
            return VerifierResult(0.0, False, {**detail, "reason": found.reason})
        answer = parse_number(found.value)
        if answer is None:
            return VerifierResult(
                0.0, False, {**detail, "reason": "extracted answer is not a number (or is too long)"}
            )
        pct = self.params.percent
        a, b = _closest(candidates(*answer, pct), candidates(*reference, pct))
        correct = self._within_tolerance(a, b)
        reason = "within tolerance" if correct else f"off by {_short(abs(a - b))}"
        return VerifierResult(self._reward(a, b, correct), correct, {**detail, "reason": reason})


def _short(x: Fraction) -> str:
    """A readable, JSON-safe rendering of a possibly huge exact number."""
    if x.denominator == 1:
        digits = str(x.numerator)
        return digits if len(digits) <= 20 else f"{digits[0]}.{digits[1:4]}e{len(digits) - 1}"
    try:
        return f"{float(x):.6g}"
    except OverflowError:
        return f"~1e{len(str(x.numerator)) - len(str(x.denominator))}"


@VERIFIERS.register("numeric")
class NumericVerifier(_NumericBase):
    """Reward 1 when the extracted number is within ``abs_tol`` (or ``rel_tol``) of the reference, else 0.

    >>> v = NumericVerifier(NumericParams())
    >>> [r.reward for r in v(["so 1,234 apples", "1/2"], [Sample("a", "?", "1234"), Sample("b", "?", "0.5")])]
    [1.0, 1.0]
    """

    name: ClassVar[str] = "numeric"
    Params: ClassVar[type[VerifierParams]] = NumericParams

    def _reward(self, a: Fraction, b: Fraction, correct: bool) -> float:
        return float(correct)


class FuzzyNumericParams(NumericParams):
    scale: float = Field(
        1.0,
        gt=0,
        le=1e6,
        description="Error, in units of max(|reference|, floor), at which the reward reaches 0: reward = "
        "max(0, 1 - |a - b| / (scale * max(|b|, floor))). Larger is more lenient.",
    )
    floor: float = Field(
        1e-9,
        gt=0,
        le=1e6,
        description="Smallest magnitude the error is measured against (see scale). It matters only for "
        "references smaller than floor, 0 included: for a reference of 0 the reward reaches 0 at an error of "
        "scale * floor. Lower it for data with numbers below 1e-9.",
    )


@VERIFIERS.register("fuzzy_numeric")
class FuzzyNumericVerifier(_NumericBase):
    """Graded numeric reward (FGRPR): 1 within tolerance, then decaying linearly with the scaled error.

    >>> v = FuzzyNumericVerifier(FuzzyNumericParams())
    >>> [round(r.reward, 2) for r in v(["10", "9", "30"], [Sample("a", "?", "10")] * 3)]
    [1.0, 0.9, 0.0]
    """

    name: ClassVar[str] = "fuzzy_numeric"
    Params: ClassVar[type[VerifierParams]] = FuzzyNumericParams

    def __init__(self, params: FuzzyNumericParams) -> None:
        super().__init__(params)
        # From the decimal text, so that floor=0.001 is exactly 1/1000 (the float is a little more).
        self.scale = Fraction(repr(params.scale))
        self.floor = Fraction(repr(params.floor))

    def _reward(self, a: Fraction, b: Fraction, correct: bool) -> float:
        if correct:
            return 1.0
        return float(max(Fraction(0), 1 - abs(a - b) / (self.scale * max(abs(b), self.floor))))
