"""``reasoning_gym``: score with the reasoning-gym task's own ``score_answer``.

reasoning-gym (DESIGN.md: "reasoning-gym for procedural verifiable tasks") ships, with every procedural
dataset, a scorer ``score_answer(answer, entry) -> float`` in [0, 1] that may give partial credit. This
verifier extracts the answer (default ``full``; ``answer_tag`` is reasoning-gym's own ``<answer>...</answer>``
convention, ``reasoning_gym.utils.extract_answer``) and calls the scorer of the dataset that generated the
entry, exactly as reasoning-gym's evaluation does, including passing None when nothing was extracted.

Where it differs: the entry comes from ``sample.meta["entry"]`` (put there by the data loader), and the
dataset is ``entry["metadata"]["source_dataset"]`` when present, else ``sample.meta["task"]``, so entries of a
``composite`` dataset are scored by the dataset they came from. A few scorers read their dataset's config;
when ``sample.meta["task_config"]`` holds the config the entries were generated with, the scorer is built
with it (otherwise with the task's default config, as ``reasoning_gym.get_score_answer_fn`` does). Scorers are arbitrary Python (some run sympy
or simulate games), so they run in timeout-pool workers: a hang costs at most ``timeout_s`` per completion
(or ``batch_timeout_s`` per batch) and never stalls training.
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
from trainer.verifiers.timeout_pool import run_with_timeout


class ReasoningGymParams(ExtractParams):
    timeout_s: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Hard wall-clock limit per completion (seconds); past it the reward is 0.",
    )
    batch_timeout_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="Optional limit for a whole batch (seconds): completions unfinished by then get 0.",
    )
    correct_threshold: float = Field(
        1.0,
        ge=0,
        le=1,
        description="A completion counts as correct when the scorer's reward is >= this value.",
    )


def task_of(sample: Sample) -> tuple[str, dict[str, Any]]:
    """(dataset name, entry) of a reasoning-gym sample; raises ValueError saying what is missing."""
    entry = sample.meta.get("entry")
    if not isinstance(entry, dict):
        raise ValueError(
            f"sample {sample.id!r} has no reasoning-gym entry in meta['entry']; load the data from a reasoning-gym task"
        )
    metadata = entry.get("metadata")
    task = (metadata.get("source_dataset") if isinstance(metadata, dict) else None) or sample.meta.get("task")
    if not isinstance(task, str) or not task:
        raise ValueError(
            f"sample {sample.id!r} names no reasoning-gym task (meta['task'] or entry metadata.source_dataset)"
        )
    return task, entry


@VERIFIERS.register("reasoning_gym")
class ReasoningGymVerifier:
    """Reward = the reasoning-gym task's score of the extracted answer; correct when >= ``correct_threshold``."""

    name: ClassVar[str] = "reasoning_gym"
    Params: ClassVar[type[VerifierParams]] = ReasoningGymParams

    def __init__(self, params: ReasoningGymParams) -> None:
        self.params = params
        self._extract = params.extractor()

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        return score_whole_batch(completions, samples, self._score_batch)

    def _score_batch(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        from trainer.verifiers.reasoning_gym_worker import score_answer

        results: list[VerifierResult | None] = [None] * len(completions)
        jobs: list[tuple[int, dict[str, Any]]] = []
        args: list[tuple[Any, ...]] = []
        for i, (completion, sample) in enumerate(zip(completions, samples, strict=True)):
            try:
                task, entry = task_of(sample)
            except ValueError as err:
                results[i] = error_result(str(err))
                continue
            found = self._extract(completion)
            expected = entry.get("answer")
            detail = {
                "task": task,
                "extracted": shown(found.value),
                "expected": None if expected is None else shown(str(expected)),
                "reason": found.reason,
            }
            jobs.append((i, detail))
            config = sample.meta.get("task_config") if task == sample.meta.get("task") else None
            args.append((task, found.value, entry, config if isinstance(config, dict) else None))
        outcomes = run_with_timeout(
            score_answer, args, self.params.timeout_s, batch_timeout_s=self.params.batch_timeout_s
        )
        for (i, detail), outcome in zip(jobs, outcomes, strict=True):
            if not outcome.ok:
                results[i] = error_result(outcome.error or "unknown error", **detail)
                continue
            reward = float(outcome.value)
            correct = reward >= self.params.correct_threshold
            if detail["extracted"] is not None:
                detail["reason"] = f"scored {reward:.3g} by reasoning-gym"
            results[i] = VerifierResult(reward, correct, detail)
        return [r if r is not None else error_result("not scored") for r in results]
