"""Worker-facing writes of an evaluation's per-problem results (workers/eval_sink.py calls these).

A batch of finished problems is stored in one transaction with bulk inserts (problems, then all their
samples: a constant number of queries per batch), then one ``eval.progress`` event carries the new
rows to the browser. A problem already stored (a re-delivered task redoing it) is skipped, so every
(problem, seed) is stored exactly once. A sample's token ids and logprobs are packed like a rollout's
(trainer.sinks.pack_token_arrays).
"""

from __future__ import annotations

from typing import Any, Protocol

from django.db import transaction
from django.db.models import F

from trainer.sinks import RolloutRecord, pack_token_arrays
from webapp.benchmarks.models import EvalProblem, EvalRun, EvalSample
from webapp.benchmarks.publish import publish_eval_event
from webapp.experiments.storable import clean_json, clean_text, finite_or_none


class SampleLike(Protocol):
    """trainer.evaluation.engine.SampleResult, as far as storage needs it."""

    index: int
    text: str
    token_ids: list[int]
    tokens: list[str]
    logprobs: list[float]
    finish_reason: str
    length: int
    reward: float
    correct: bool
    extracted_answer: str | None
    detail: dict[str, Any]
    rewards: dict[str, float]


class ProblemLike(Protocol):
    """trainer.evaluation.engine.ProblemResult, as far as storage needs it."""

    problem_id: str
    prompt: str
    answer: str | None
    seed: int
    index: int
    samples: list[Any]

    @property
    def n(self) -> int: ...

    @property
    def c(self) -> int: ...


def eval_record_problems(*, eval_run_id: int, problems: list[ProblemLike]) -> int:
    """Store finished problems (skipping any already stored); returns how many were new."""
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().get(pk=eval_run_id)
        stored = set(EvalProblem.objects.filter(eval_run_id=eval_run_id).values_list("problem_id", "seed"))
        fresh = [p for p in problems if (str(p.problem_id), int(p.seed)) not in stored]
        if not fresh:
            return 0
        rows = EvalProblem.objects.bulk_create([
            EvalProblem(
                eval_run_id=eval_run_id, index=int(p.index), problem_id=clean_text(str(p.problem_id)),
                seed=int(p.seed), prompt=clean_text(p.prompt),
                answer=None if p.answer is None else clean_text(str(p.answer)), n=int(p.n), c=int(p.c),
            )
            for p in fresh
        ])  # fmt: skip
        EvalSample.objects.bulk_create(
            [_sample_row(row, s) for row, p in zip(rows, fresh, strict=True) for s in p.samples]
        )
        EvalRun.objects.filter(pk=eval_run_id).update(problems_done=F("problems_done") + len(fresh))
        run.refresh_from_db(fields=["problems_done", "problems_total"])
        publish_eval_event(eval_run_id=eval_run_id, event="eval.progress", payload={
            "problems_done": run.problems_done, "problems_total": run.problems_total,
            "problems": [problem_row(row) for row in rows],
        })  # fmt: skip
    return len(fresh)


def problem_row(row: EvalProblem) -> dict[str, Any]:
    """One problem as the drill-down table shows it (model text is inserted with textContent)."""
    return {
        "id": row.pk, "index": row.index, "problem_id": row.problem_id, "seed": row.seed,
        "prompt": row.prompt[:300], "answer": row.answer, "n": row.n, "c": row.c,
    }  # fmt: skip


def _sample_row(problem: EvalProblem, sample: SampleLike) -> EvalSample:
    record = RolloutRecord(
        step=0, prompt_id=problem.problem_id, group=0, sample_index=int(sample.index), prompt="",
        completion="", finish_reason=sample.finish_reason, reward=float(sample.reward), rewards={},
        correct=bool(sample.correct), details={}, advantage=0.0, token_ids=[int(t) for t in sample.token_ids],
        tokens=list(sample.tokens), token_values={"logprob": [float(v) for v in sample.logprobs]},
    )  # fmt: skip
    return EvalSample(
        problem=problem, index=int(sample.index), text=clean_text(sample.text),
        finish_reason=str(sample.finish_reason)[:32], length=int(sample.length),
        reward=finite_or_none(sample.reward), correct=bool(sample.correct),
        extracted_answer=None if sample.extracted_answer is None else clean_text(str(sample.extracted_answer)),
        detail=clean_json(sample.detail or {}), rewards=clean_json(dict(sample.rewards or {})), tokens=[clean_text(t) for t in sample.tokens],
        token_data=pack_token_arrays(record),
    )  # fmt: skip
