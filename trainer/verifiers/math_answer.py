"""``math``: mathematical equivalence of the completion's final answer and the reference, via math-verify.

The "binary final-answer math verifier" of shared/METHODS.md §3a (001:L43 and most math papers), built on
Hugging Face's math-verify as DESIGN.md asks: ``parse`` extracts the last answer (``\\boxed{}`` first, then
LaTeX, then plain expressions) and ``verify`` compares it with the parsed reference symbolically and
numerically, so ``\\frac{1}{2}`` equals ``0.5``, ``{2, 1}`` equals ``\\{1,2\\}`` and ``[1,3)`` is an interval.

How it differs from calling math-verify directly (as open-r1's ``accuracy_reward`` does):

- Each completion runs in a timeout-pool worker with a hard, parent-enforced wall-clock limit
  (``timeout_s``, 5 s); math-verify's signal-based timeouts do not work off the main thread and cannot stop
  a call stuck in C. A timed-out completion gets reward 0 and ``detail['error'] = 'timed out after 5 s'``:
  an error, not a verdict.
- The batch is judged in parallel on up to ``workers`` processes (8), each hang holding only its own
  worker, and under ``batch_timeout_s`` (30 s, on by default). Eight pathological answers (``9^9^9^9``) used
  to take 48 s one after another on a 2-core machine (one worker: half the CPUs); now 7.4 s, one
  ``timeout_s`` plus the workers' start (``benchmarks/verifier_pathological.py --kind towers``).
- Scientific notation is read whole: math-verify reads ``2e5`` as 2 (see math_worker.py).
- A sympy fallback (``sympy_fallback``) catches equivalences math-verify misses: degrees, repeating
  decimals, ``i``, plain-text ``sqrt(8)`` (math_worker.py; benchmarks/math_verifier_vs_math_verify.py).
- Multiple choice: when the sample carries its options (``sample.meta[choices_field]``, e.g. a ``choices``
  column) and the reference is a letter or one option's text, "The answer is (B)", "B) 42", "I choose
  option C" and "the correct option is 'Paris'" are read as that option (``pick_choice``). A letter reference
  with no options attached is matched by an explicit statement of that letter ("the answer is (C)").
- A bare reference such as ``(0, 1]`` is wrapped in ``\\boxed{}`` before parsing; math-verify would
  otherwise read only its last number.
- ``extract`` can pre-select the answer (e.g. ``answer_tag``); the selected text is then wrapped in
  ``\\boxed{}`` so math-verify parses it whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field, model_validator

from trainer.samples import Sample
from trainer.verifiers.base import (
    VERIFIERS,
    VerifierParams,
    VerifierResult,
    error_result,
    score_whole_batch,
    shown,
)
from trainer.verifiers.extract import ExtractParams
from trainer.verifiers.timeout_pool import Outcome, describe_error, run_with_timeout


class MathParams(ExtractParams):
    timeout_s: float = Field(
        5.0,
        gt=0,
        le=600,
        description="Hard wall-clock limit per completion (seconds); past it the reward is 0 and the detail "
        "says 'timed out'.",
    )
    batch_timeout_s: float | None = Field(
        30.0,
        gt=0,
        le=3600,
        description="Limit for a whole batch (seconds): completions unfinished by then get 0 and a 'batch "
        "timed out' error. At least timeout_s; null turns it off.",
    )
    workers: int = Field(
        8,
        ge=1,
        le=64,
        description="Worker processes judging a batch in parallel. A pathological answer holds its worker "
        "for timeout_s, so n of them take about timeout_s * ceil(n / workers). Workers share the CPU cores: "
        "on a small machine raise timeout_s if answers that are merely slow time out.",
    )
    sympy_fallback: bool = Field(
        True,
        description="When math-verify finds an answer not equivalent, also try sympy (degrees, repeating "
        "decimals, i, plain-text sqrt(8), simplify(a - b) == 0, random points), within half of timeout_s.",
    )
    choices_field: str | None = Field(
        "choices",
        min_length=1,
        max_length=100,
        description="Sample field (a data column) holding multiple-choice options: a list ['Paris', ...] "
        "(lettered A, B, ...), a {letter: text} mapping, or 'A) ... B) ...' text. When present and the "
        "reference is a letter or an option's text, an answer choosing that option scores 1 (others "
        "are left to math-verify). null: off.",
    )
    float_rounding: int = Field(
        6, ge=0, le=30, description="math-verify: decimal places floats are rounded to."
    )
    numeric_precision: int = Field(
        15, ge=1, le=100, description="math-verify: significant digits in numeric comparison."
    )
    strict: bool = Field(
        True,
        description="math-verify strict mode: variables matter and sets differ from tuples; false relaxes both.",
    )

    @model_validator(mode="after")
    def _check_batch_timeout(self) -> MathParams:
        if self.batch_timeout_s is not None and self.batch_timeout_s < self.timeout_s:
            raise ValueError(
                f"batch_timeout_s ({self.batch_timeout_s:g}) is shorter than timeout_s ({self.timeout_s:g}): "
                "raise batch_timeout_s, lower timeout_s, or set batch_timeout_s to null to turn it off"
            )
        return self


@VERIFIERS.register("math")
class MathVerifier:
    """Reward 1 when math-verify finds the completion's answer equivalent to ``sample.answer``, else 0.

    >>> v = MathVerifier(MathParams())
    >>> [r.reward for r in v(["so $x = \\\\frac{1}{2}$", "\\\\boxed{3}"], [Sample("a", "?", "0.5"), Sample("b", "?", "4")])]
    [1.0, 0.0]
    """

    name: ClassVar[str] = "math"
    Params: ClassVar[type[VerifierParams]] = MathParams

    def __init__(self, params: MathParams) -> None:
        self.params = params
        self._extract = params.extractor()

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_whole_batch(completions, samples, self._score_batch)

    def _score_batch(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        from trainer.verifiers.math_worker import verify_answer  # math-verify loads only when scoring

        results: list[VerifierResult | None] = [None] * len(completions)
        jobs: list[int] = []
        args: list[tuple[Any, ...]] = []
        p = self.params
        for i, (completion, sample) in enumerate(zip(completions, samples, strict=True)):
            if sample.answer is None:
                results[i] = error_result(f"sample {sample.id!r} has no reference answer; math needs one")
                continue
            found = self._extract(completion)
            if found.value is None:
                results[i] = VerifierResult(
                    0.0, False, {"extracted": None, "expected": shown(sample.answer), "reason": found.reason}
                )
                continue
            choice = self._multiple_choice(found.value, sample)
            if choice is not None:
                results[i] = choice
                continue
            jobs.append(i)
            wrap = p.extract != "full"
            budget = p.timeout_s / 2 if p.sympy_fallback else 0.0
            args.append(
                (sample.answer, found.value, wrap, p.float_rounding, p.numeric_precision, p.strict, budget)
            )
        outcomes = run_with_timeout(
            verify_answer, args, p.timeout_s, batch_timeout_s=p.batch_timeout_s, max_workers=p.workers
        )
        for i, outcome in zip(jobs, outcomes, strict=True):
            results[i] = self._result(outcome, samples[i])
        return [r if r is not None else error_result("not scored") for r in results]

    def _multiple_choice(self, answer: str, sample: Sample) -> VerifierResult | None:
        """Reward 1 when the sample is multiple choice and the answer picks the right option, else None.

        Another pick is left to math-verify rather than scored 0 here: with options ["1", "2", "3"] and the
        reference "3", ``\\boxed{6/2}`` names "2" last but is still right.
        """
        field = self.params.choices_field
        options = parse_choices(sample.meta.get(field)) if field else None
        if sample.answer is None:
            return None
        if not options:
            return _bare_letter_choice(answer, sample.answer)
        wanted = _reference_letter(sample.answer, options)
        if wanted is None or pick_choice(answer, options) != wanted:
            return None
        detail = {
            "extracted": f"({wanted}) {shown(options[wanted], 80)}",
            "expected": shown(sample.answer),
            "reason": "chose the right option",
        }
        return VerifierResult(1.0, True, detail)

    def _result(self, outcome: Outcome, sample: Sample) -> VerifierResult:
        expected = shown(sample.answer)
        if not outcome.ok:
            return error_result(outcome.error or "unknown error", extracted=None, expected=expected)
        try:
            correct, extracted, parsed_reference = outcome.value
        except Exception as err:
            return error_result(f"unexpected worker reply: {describe_error(err)}", expected=expected)
        if parsed_reference is None:
            return error_result(
                f"math-verify could not parse the reference answer {str(expected)[:80]!r} of sample {sample.id!r}; "
                "fix the dataset's answer (LaTeX or a plain number) or use the exact verifier",
                extracted=extracted,
                expected=expected,
            )
        if extracted is None:
            return VerifierResult(
                0.0, False, {"extracted": None, "expected": expected, "reason": "no parsable answer found"}
            )
        reason = "equivalent" if correct else "not equivalent"
        return VerifierResult(
            float(correct), bool(correct), {"extracted": extracted, "expected": expected, "reason": reason}
        )


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LISTED_OPTION_RE = re.compile(r"(?:^|\n|;)\s*\(?([A-Z])[).:]\s*(.+?)\s*(?=\n|;|$)")
# Explicit statements of the chosen letter; the last one in the answer counts.
_STATED_LETTER_RES = (
    re.compile(r"\\(?:boxed|fbox)\{\s*\(?\s*([A-Z])\s*\)?\s*\}"),
    re.compile(
        r"(?i:\b(?:answer|option|choice)\b)(?:\s+(?i:is|would\s+be|will\s+be|must\s+be))?\s*[:=]?\s*"
        r"(?i:option\s+|choice\s+)?[(\[]?\s*([A-Z])(?![\w'])"
    ),
    re.compile(
        r"(?i:\b(?:choose|chose|select|pick|go\s+with)\b)\s+(?i:option\s+|choice\s+)?\(?([A-Z])(?![\w'])"
    ),
)
_LEADING_LETTER_RE = re.compile(r"\s*\(?([A-Z])(?:[).:]|\s*$)")  # "B) 42", "(C)", "B" at the very start
_PAREN_LETTER_RE = re.compile(r"(?<![\w(])\(([A-Z])\)")  # "(B)" anywhere, a weaker sign


def _bare_letter_choice(answer: str, reference: str) -> VerifierResult | None:
    """A letter reference ('C', '(C)') with no options attached, and an answer that states that letter
    explicitly ("the answer is (C)", ``\\boxed{C}``, "I choose C"): reward 1. Anything else is left to math-verify."""
    letter = reference.strip().strip("()").strip()
    if len(letter) != 1 or letter not in _LETTERS:
        return None
    stated = [m.group(1) for pattern in _STATED_LETTER_RES for m in pattern.finditer(answer)]
    if not stated or any(s != letter for s in stated):  # a statement of another letter: not ours to accept
        return None
    return VerifierResult(
        1.0,
        True,
        {"extracted": f"({letter})", "expected": shown(reference), "reason": "stated the right letter"},
    )


def parse_choices(value: Any) -> dict[str, str] | None:
    """``{letter: option text}`` from a list, a mapping or 'A) ... B) ...' text; None if not options.

    >>> parse_choices(["Paris", "London"])
    {'A': 'Paris', 'B': 'London'}
    """
    if isinstance(value, list | tuple) and 2 <= len(value) <= len(_LETTERS):
        return {_LETTERS[i]: str(v).strip() for i, v in enumerate(value)}
    if isinstance(value, dict) and 2 <= len(value) <= len(_LETTERS):
        options = {str(k).strip().strip("()").upper(): str(v).strip() for k, v in value.items()}
        return options if all(len(k) == 1 and k in _LETTERS for k in options) else None
    if isinstance(value, str):
        listed = {m.group(1): m.group(2) for m in _LISTED_OPTION_RE.finditer(value)}
        return listed if len(listed) >= 2 else None
    return None


def _normal(text: str) -> str:
    return " ".join(text.strip().strip("$").strip("'\"").lower().split()).rstrip(".")


def _reference_letter(reference: str, options: dict[str, str]) -> str | None:
    """The option the reference names: a letter ('B', '(B)', 'B)') or an option's text; None otherwise."""
    letter = reference.strip().strip("()").rstrip(").:").strip().upper()
    if len(letter) == 1 and letter in options:
        return letter
    wanted = _normal(reference)
    return next((k for k, v in options.items() if _normal(v) == wanted), None)


def pick_choice(answer: str, options: dict[str, str]) -> str | None:
    """The letter of the option ``answer`` chooses, or None when it names none.

    In order: the last explicit statement ("the answer is (B)", "I choose option C", ``\\boxed{B}``); a
    letter opening the answer ("B) 42"); the last "(B)"; the option whose text occurs last ("the correct
    option is 'Paris'"). Only letters of the given options count.

    >>> pick_choice("I choose option C", {"A": "1", "B": "2", "C": "3"})
    'C'
    """
    for pattern in _STATED_LETTER_RES:
        stated = [m.group(1) for m in pattern.finditer(answer) if m.group(1) in options]
        if stated:
            return stated[-1]
    leading = _LEADING_LETTER_RE.match(answer)
    if leading and leading.group(1) in options:
        return leading.group(1)
    marked = [m.group(1) for m in _PAREN_LETTER_RE.finditer(answer) if m.group(1) in options]
    if marked:
        return marked[-1]
    return _last_named_option(answer, options)


_STATED_TEXT_RE = re.compile(
    r"\b(?:(?:answer|option|choice)(?:\s+(?:is|would\s+be|will\s+be|must\s+be))?\s*[:=]?|choose|chose|select|"
    r"pick|go\s+with)\s*[\"'`*]*",
    re.IGNORECASE,
)


def _last_named_option(answer: str, options: dict[str, str]) -> str | None:
    """The option whose text follows the last "answer is", else the option whose text occurs last."""
    text = answer.lower()
    needles = {letter: _normal(option) for letter, option in options.items() if _normal(option)}
    for lead in reversed(list(_STATED_TEXT_RE.finditer(text))):
        after = text[lead.end() :]
        stated = [(len(n), k) for k, n in needles.items() if re.match(rf"{re.escape(n)}(?!\w)", after)]
        if stated:
            return max(stated)[1]
    best: tuple[int, int, str] | None = None  # (end, length, letter): the latest end, then the longest text
    for letter, needle in needles.items():
        for m in re.finditer(rf"(?<!\w){re.escape(needle)}(?!\w)", text):
            key = (m.end(), len(needle), letter)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None
