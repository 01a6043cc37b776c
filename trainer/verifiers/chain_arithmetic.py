"""``chain_arithmetic``: scores the delimited final answer of a scratchpad and names its first wrong step.

The scratchpad is the one trainer/data/chain_arithmetic.py writes: the expression rewritten once per
operation, each line the expression with its leftmost operation done (``15*4-5=60-5=55`` for the prompt
``(9+6)*4-5=``), lines joined by ``=`` (or ``;`` or newlines), then ``#### <answer>`` (the GSM8K
delimiter). The reward is outcome-only, as in GSM8K-style RLVR: 1.0 when the integer after the first
``####`` equals ``sample.answer``, else 0.0 (no marker, no number, another number). The detail adds a
step-level reading for process-supervision work in the spirit of Lightman et al. 2023, "Let's Verify Step
by Step" (which labels the first wrong step of a solution): the written lines are compared in order with
the reference scratchpad in ``sample.meta["solution"]``, and ``first_wrong_step`` gives the index, the
expected and the written intermediate result (a line's leading number), both lines, and the kind of
error:

- ``arithmetic``: the rest of the line copied right, its leading result wrong;
- ``operands``: the operations still to do copied wrong (a dropped, changed or invented operand or
  operator);
- ``unreadable``: a line that is not an expression of integers, ``+ - *`` and parentheses;
  ``missing``: fewer lines than the reference; ``extra``: every reference line right, then more.

Spaces are ignored, ``x`` and ``×`` read as ``*``, and parentheses do not count when lines are compared.
Work is bounded: only the first ``max_chars`` characters are read, at most ``MAX_STEPS`` lines, and a line
longer than ``MAX_SEGMENT_CHARS`` counts as unreadable without being matched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from trainer.samples import Sample
from trainer.verifiers.base import VERIFIERS, VerifierParams, VerifierResult, error_result, score_each, shown

# The format trainer/data/chain_arithmetic.py writes (verifiers may not import trainer.data).
ANSWER_MARKER = "####"
MAX_STEPS = 64
MAX_SEGMENT_CHARS = 200
_LINE_SPLIT_RE = re.compile(r"[=;\n]+")  # lines are joined by "=" (and may be by ";" or newlines)
_LINE_RE = re.compile(r"[()]*-?\d{1,40}(?:[()]*[-+*][()]*\d{1,40})*[()]*")
_LEADING_RE = re.compile(r"[()]*(-?\d{1,40})")
_ANSWER_RE = re.compile(r"\s*([-+]?\d{1,40})(?!\d)")
_TIMES = str.maketrans({"x": "*", "×": "*", " ": None, "\t": None})


@dataclass(frozen=True)
class Line:
    """One readable line of a scratchpad: its text (normalised), its leading result and what follows it."""

    text: str
    result: str  # the leading number: this step's intermediate result
    rest: str  # the operations still to do, parentheses dropped

    @classmethod
    def read(cls, segment: str) -> Line | None:
        text = segment.translate(_TIMES)
        if len(text) > MAX_SEGMENT_CHARS or not _LINE_RE.fullmatch(text):
            return None
        leading = _LEADING_RE.match(text)
        assert leading is not None  # _LINE_RE starts with the same number
        return cls(text, str(int(leading.group(1))), text[leading.end() :].replace("(", "").replace(")", ""))

    def same(self, other: Line) -> bool:
        return (self.result, self.rest) == (other.result, other.rest)


def split_scratchpad(text: str, max_chars: int) -> tuple[list[Line | str], str | None]:
    """The lines before the first ``####`` (a Line, or the unreadable line's text) and what follows the
    marker (None when there is no marker)."""
    text = text[:max_chars]
    at = text.find(ANSWER_MARKER)
    body, tail = (text, None) if at < 0 else (text[:at], text[at + len(ANSWER_MARKER) :])
    lines: list[Line | str] = []
    for segment in _LINE_SPLIT_RE.split(body):
        if len(lines) >= MAX_STEPS:
            break
        if not segment.strip():
            continue
        line = Line.read(segment)
        lines.append(segment.strip() if line is None else line)
    return lines, tail


def first_wrong_step(written: Sequence[Line | str], expected: Sequence[Line]) -> dict[str, Any] | None:
    """Where ``written`` first departs from ``expected`` (index, expected and written result, kind), or None."""
    for index, want in enumerate(expected):
        where: dict[str, Any] = {"index": index, "expected": want.result, "expected_step": want.text}
        if index >= len(written):
            return {**where, "written": None, "written_step": None, "kind": "missing"}
        got = written[index]
        if isinstance(got, str):
            return {**where, "written": None, "written_step": shown(got, 80), "kind": "unreadable"}
        if got.same(want):
            continue
        kind = "arithmetic" if got.rest == want.rest else "operands"
        return {**where, "written": got.result, "written_step": shown(got.text, 80), "kind": kind}
    if len(written) > len(expected):
        extra = written[len(expected)]
        return {
            "index": len(expected),
            "expected": None,
            "expected_step": None,
            "written": extra.result if isinstance(extra, Line) else None,
            "written_step": shown(extra.text if isinstance(extra, Line) else extra, 80),
            "kind": "extra",
        }
    return None


def _reference_steps(sample: Sample) -> tuple[list[Line] | None, str | None]:
    """The reference scratchpad's lines, or None and why they cannot be read."""
    solution = sample.meta.get("solution") if isinstance(sample.meta, dict) else None
    if not isinstance(solution, str):
        return None, "sample.meta has no 'solution' scratchpad: only the final answer is checked"
    lines, _ = split_scratchpad(solution, len(solution))
    readable = [line for line in lines if isinstance(line, Line)]
    if len(readable) != len(lines) or not readable:
        return (
            None,
            "sample.meta['solution'] is not a chain_arithmetic scratchpad: only the final answer is checked",
        )
    return readable, None


def _step_detail(written: Sequence[Line | str], sample: Sample) -> dict[str, Any]:
    """The step-level part of the detail: counts, the first wrong step, how many leading steps are right."""
    expected, why_not = _reference_steps(sample)
    if expected is None:
        return {
            "steps_written": len(written),
            "steps_expected": None,
            "first_wrong_step": None,
            "steps_note": why_not,
        }
    wrong = first_wrong_step(written, expected)
    return {
        "steps_written": len(written),
        "steps_expected": len(expected),
        "first_wrong_step": wrong,
        "steps_right": len(expected) if wrong is None else wrong["index"],
    }


def _right_share(detail: dict[str, Any]) -> float:
    """The share of the reference steps written right before the first wrong one (0 without a reference)."""
    expected = detail.get("steps_expected")
    return detail.get("steps_right", 0) / expected if expected else 0.0


class ChainArithmeticParams(VerifierParams):
    max_chars: int = Field(
        4096,
        ge=64,
        le=1_000_000,
        description="Read only the first max_chars characters of a completion (bounds the work on runaway "
        "output; a scratchpad of the built-in levels is under 100).",
    )
    step_credit: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="Partial credit for a wrong final answer: step_credit x the share of the reference steps "
        "written right before the first wrong one (a step-level reward in the spirit of Lightman et al. 2023, "
        "'Let's Verify Step by Step'); a right answer always scores 1. 0: outcome only.",
    )


@VERIFIERS.register("chain_arithmetic")
class ChainArithmeticVerifier:
    """Reward 1 when the integer after the first '####' equals ``sample.answer``; the detail names the first
    wrong intermediate step against ``sample.meta['solution']``.

    >>> v = ChainArithmeticVerifier(ChainArithmeticParams())
    >>> s = Sample("c", "(9+6)*4-5=", "55", {"solution": "15*4-5=60-5=55;#### 55"})
    >>> [r.reward for r in v(["15*4-5=60-5=55;#### 55", "15*4-5=61-5=56;#### 56"], [s, s])]
    [1.0, 0.0]
    >>> v(["15*4-5=61-5=56;#### 56"], [s])[0].detail["first_wrong_step"]["index"]
    1
    """

    name: ClassVar[str] = "chain_arithmetic"
    Params: ClassVar[type[VerifierParams]] = ChainArithmeticParams

    def __init__(self, params: ChainArithmeticParams) -> None:
        self.params = params

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_each(completions, samples, self._score_one)

    def _score_one(self, completion: str, sample: Sample) -> VerifierResult:
        reference = (sample.answer or "").strip()
        if not re.fullmatch(r"[-+]?\d{1,40}", reference):
            return error_result(
                f"sample {sample.id!r} has no integer reference answer ({shown(sample.answer, 40)!r}); "
                "chain_arithmetic needs one",
                extracted=None,
                expected=shown(sample.answer),
            )
        written, tail = split_scratchpad(completion, self.params.max_chars)
        found = None if tail is None else _ANSWER_RE.match(tail)
        detail: dict[str, Any] = {
            "extracted": None if found is None else found.group(1),
            "expected": reference,
        }
        if tail is None:
            detail["reason"] = f"no final answer: expected '{ANSWER_MARKER} <integer>' after the steps"
        elif found is None:
            detail["reason"] = f"no integer after '{ANSWER_MARKER}'"
        correct = found is not None and int(found.group(1)) == int(reference)
        detail.setdefault("reason", "match" if correct else "mismatch")
        detail.update(_step_detail(written, sample))
        reward = 1.0 if correct else self.params.step_credit * _right_share(detail)
        return VerifierResult(reward, correct, detail)
