"""``math``: mathematical equivalence of the completion's final answer and the reference, via math-verify.

The "binary final-answer math verifier" of shared/METHODS.md §3a (001:L43 and most math papers), built on
Hugging Face's math-verify as DESIGN.md asks: ``parse`` extracts the last answer (``\\boxed{}`` first, then
LaTeX, then plain expressions) and ``verify`` compares it with the parsed reference symbolically and
numerically, so ``\\frac{1}{2}`` equals ``0.5``, ``{2, 1}`` equals ``\\{1,2\\}`` and ``[1,3)`` is an interval.

How it differs from calling math-verify directly (as open-r1's ``accuracy_reward`` does):

- Each completion runs in a timeout-pool worker with a hard, parent-enforced wall-clock limit
  (``timeout_s``); math-verify's signal-based timeouts do not work off the main thread and cannot stop a call
  stuck in C. A timed-out completion gets reward 0 and ``detail['error'] = 'timeout after Xs'``.
- The whole batch goes to the pool in one round trip (a few chunks per worker), not one process per call.
- A bare reference such as ``(0, 1]`` is wrapped in ``\\boxed{}`` before parsing; math-verify would
  otherwise read only its last number.
- ``extract`` can pre-select the answer (e.g. ``answer_tag``); the selected text is then wrapped in
  ``\\boxed{}`` so math-verify parses it whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

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
        description="Hard wall-clock limit per completion (seconds); past it the reward is 0.",
    )
    batch_timeout_s: float | None = Field(
        None,
        gt=0,
        description="Optional limit for a whole batch (seconds): completions unfinished by then get 0.",
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
            jobs.append(i)
            wrap = p.extract != "full"
            args.append((sample.answer, found.value, wrap, p.float_rounding, p.numeric_precision, p.strict))
        outcomes = run_with_timeout(verify_answer, args, p.timeout_s, batch_timeout_s=p.batch_timeout_s)
        for i, outcome in zip(jobs, outcomes, strict=True):
            results[i] = self._result(outcome, samples[i])
        return [r if r is not None else error_result("not scored") for r in results]

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
