"""``chain_arithmetic``: scores the delimited final answer of a scratchpad and names its first wrong step.

The scratchpad is the one trainer/data/chain_arithmetic.py writes: steps ``a<op>b=r`` joined by ``;`` (or
newlines), then ``#### <answer>`` (the GSM8K delimiter). The reward is outcome-only, as in GSM8K-style
RLVR: 1.0 when the integer after the first ``####`` equals ``sample.answer``, else 0.0 (no marker, no
number, another number). The detail adds a step-level reading for process-supervision work in the spirit
of Lightman et al. 2023, "Let's Verify Step by Step" (which labels the first wrong step of a solution):
the written steps are compared in order with the reference scratchpad in ``sample.meta["solution"]``, and
``first_wrong_step`` gives the index, the expected and the written result, and the kind of error:

- ``arithmetic``: the right operation with a wrong result;
- ``operands``: another operation than the reference's (a mis-copied operand or operator);
- ``unreadable``: a segment that is not ``a<op>b=r``; ``missing``: fewer steps than the reference;
- ``extra``: every reference step right, then more.

Operands of ``+`` and ``*`` may be written in either order; ``x`` and ``×`` read as ``*``. Work is bounded:
only the first ``max_chars`` characters are read, at most ``MAX_STEPS`` segments, numbers of at most 40
digits, and a segment longer than ``MAX_SEGMENT_CHARS`` counts as unreadable without being matched.
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
_STEP_RE = re.compile(r"\s*(-?\d{1,40})\s*([-+*x×])\s*(-?\d{1,40})\s*=\s*(-?\d{1,40})\s*")
_ANSWER_RE = re.compile(r"\s*([-+]?\d{1,40})(?!\d)")
_SEGMENT_RE = re.compile(r"[^;\n]+")  # steps are separated by ";" or newlines


@dataclass(frozen=True)
class Step:
    """One written step ``left op right = result``."""

    left: int
    op: str
    right: int
    result: int

    def same_operation(self, other: Step) -> bool:
        if self.op != other.op:
            return False
        pairs = {(self.left, self.right)}
        if self.op in "+*":
            pairs.add((self.right, self.left))
        return (other.left, other.right) in pairs

    def __str__(self) -> str:
        return f"{self.left}{self.op}{self.right}={self.result}"


def split_scratchpad(text: str, max_chars: int) -> tuple[list[Step | str], str | None]:
    """The steps before the first ``####`` (a Step, or the unreadable segment's text) and what follows it
    (None when there is no marker)."""
    text = text[:max_chars]
    at = text.find(ANSWER_MARKER)
    body, tail = (text, None) if at < 0 else (text[:at], text[at + len(ANSWER_MARKER) :])
    steps: list[Step | str] = []
    for match in _SEGMENT_RE.finditer(body):
        segment = match.group()
        if len(steps) >= MAX_STEPS:
            break
        if not segment.strip():
            continue
        found = _STEP_RE.fullmatch(segment) if len(segment) <= MAX_SEGMENT_CHARS else None
        if found is None:
            steps.append(segment.strip())
            continue
        left, op, right, result = found.groups()
        steps.append(Step(int(left), "*" if op in "x×" else op, int(right), int(result)))
    return steps, tail


def first_wrong_step(written: Sequence[Step | str], expected: Sequence[Step]) -> dict[str, Any] | None:
    """Where ``written`` first departs from ``expected`` (index, expected and written result, kind), or None."""
    for index, want in enumerate(expected):
        where: dict[str, Any] = {"index": index, "expected": str(want.result), "expected_step": str(want)}
        if index >= len(written):
            return {**where, "written": None, "written_step": None, "kind": "missing"}
        got = written[index]
        if isinstance(got, str):
            return {**where, "written": None, "written_step": shown(got, 80), "kind": "unreadable"}
        if got.same_operation(want) and got.result == want.result:
            continue
        kind = "arithmetic" if got.same_operation(want) else "operands"
        return {**where, "written": str(got.result), "written_step": str(got), "kind": kind}
    if len(written) > len(expected):
        extra = written[len(expected)]
        return {
            "index": len(expected),
            "expected": None,
            "expected_step": None,
            "written": str(extra.result) if isinstance(extra, Step) else None,
            "written_step": shown(str(extra), 80),
            "kind": "extra",
        }
    return None


def _reference_steps(sample: Sample) -> tuple[list[Step] | None, str | None]:
    """The reference scratchpad's steps, or None and why they cannot be read."""
    solution = sample.meta.get("solution") if isinstance(sample.meta, dict) else None
    if not isinstance(solution, str):
        return None, "sample.meta has no 'solution' scratchpad: only the final answer is checked"
    steps, _ = split_scratchpad(solution, len(solution))
    readable = [s for s in steps if isinstance(s, Step)]
    if len(readable) != len(steps) or not readable:
        return (
            None,
            "sample.meta['solution'] is not a chain_arithmetic scratchpad: only the final answer is checked",
        )
    return readable, None


def _step_detail(written: Sequence[Step | str], sample: Sample) -> dict[str, Any]:
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


class ChainArithmeticParams(VerifierParams):
    max_chars: int = Field(
        4096,
        ge=64,
        le=1_000_000,
        description="Read only the first max_chars characters of a completion (bounds the work on runaway "
        "output; a scratchpad of the built-in levels is under 100).",
    )


@VERIFIERS.register("chain_arithmetic")
class ChainArithmeticVerifier:
    """Reward 1 when the integer after the first '####' equals ``sample.answer``; the detail names the first
    wrong intermediate step against ``sample.meta['solution']``.

    >>> v = ChainArithmeticVerifier(ChainArithmeticParams())
    >>> s = Sample("c", "(12+7)*3-4=", "53", {"solution": "12+7=19;19*3=57;57-4=53;#### 53"})
    >>> [r.reward for r in v(["12+7=19;19*3=57;57-4=53;#### 53", "12+7=19;19*3=58;58-4=54;#### 54"], [s, s])]
    [1.0, 0.0]
    >>> v(["12+7=19;19*3=58;58-4=54;#### 54"], [s])[0].detail["first_wrong_step"]["index"]
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
        return VerifierResult(float(correct), correct, detail)
