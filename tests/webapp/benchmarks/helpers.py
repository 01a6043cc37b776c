"""Builders for benchmark tests: engine-shaped problem results (trainer.evaluation.engine's dataclasses)."""

from __future__ import annotations

from typing import Any

from trainer.evaluation.engine import ProblemResult, SampleResult

SMALL_BENCHMARK: dict[str, Any] = {
    "n_samples": 4,
    "max_problems": 3,
    "batch_size": 4,
    "bootstrap_samples": 20,
}


def problem_result(
    problem_id: str, *, index: int = 0, correct: list[bool] | None = None, seed: int = 0
) -> ProblemResult:
    """A problem whose samples say ``" 4"`` (correct) or ``" 5"``, with two tokens each."""
    correct = correct if correct is not None else [True, False, False, True]
    samples = [
        SampleResult(
            index=i,
            text=" 4" if ok else " <b>5</b>",
            token_ids=[10 + i, 1],
            tokens=[" 4" if ok else " <b>5</b>", "<eos>"],
            logprobs=[-0.25 * (i + 1), -0.01],
            finish_reason="eos",
            length=2,
            reward=1.0 if ok else 0.0,
            correct=ok,
            extracted_answer="4" if ok else "5",
            detail={"exact": {"extracted": "4" if ok else "5"}},
            rewards={"exact": 1.0 if ok else 0.0},
        )
        for i, ok in enumerate(correct)
    ]
    return ProblemResult(
        problem_id=problem_id,
        prompt=f"{problem_id}: 2+2=",
        answer="4",
        seed=seed,
        samples=samples,
        index=index,
    )
