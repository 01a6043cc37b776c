"""Reads for benchmarks and evaluations.

``*_get_for_user`` selectors check membership (outsiders get 404, so ids cannot be probed); the others
trust their caller (the worker, or a view that already checked). The results table, the Pass@k curves
and the over-training plots are built in selectors_tables.py.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F, Q, QuerySet
from django.http import Http404

from trainer.sinks import unpack_token_arrays
from webapp.benchmarks.models import Benchmark, EvalProblem, EvalRun, EvalSample
from webapp.core.errors import InvalidInput
from webapp.core.queues import QueuePosition, queue_position
from webapp.core.tasks_by_name import RUN_EVALUATION
from webapp.experiments.models import Checkpoint, Experiment
from webapp.experiments.selectors import checkpoint_has_files
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser

# --- for the worker --------------------------------------------------------------------------------


def eval_run_get(*, eval_run_id: int) -> EvalRun:
    return EvalRun.objects.select_related("benchmark", "benchmark__project").get(pk=eval_run_id)


def eval_should_stop(*, eval_run_id: int) -> bool:
    return (
        EvalRun.objects.filter(pk=eval_run_id)
        .filter(Q(cancel_requested=True) | Q(status="cancelled"))
        .exists()
    )


def eval_stored_problems(*, eval_run_id: int) -> list[dict[str, Any]]:
    """Every problem already stored for the evaluation with its samples, in the shape of
    ``trainer.evaluation.engine.ProblemResult.to_dict()``: what a resumed evaluation passes to the engine as
    ``done``, so finished problems are not generated again."""
    problems = EvalProblem.objects.filter(eval_run_id=eval_run_id).prefetch_related("samples")
    out = []
    for p in problems:
        samples = []
        for s in p.samples.all():
            ids, channels = unpack_token_arrays(bytes(s.token_data))
            samples.append({
                "index": s.index, "text": s.text, "token_ids": ids, "tokens": list(s.tokens),
                "logprobs": channels["logprob"], "finish_reason": s.finish_reason, "length": s.length,
                "reward": s.reward if s.reward is not None else 0.0, "correct": s.correct,
                "extracted_answer": s.extracted_answer, "detail": dict(s.detail), "rewards": dict(s.rewards),
            })  # fmt: skip
        out.append(
            {
                "problem_id": p.problem_id,
                "prompt": p.prompt,
                "answer": p.answer,
                "seed": p.seed,
                "index": p.index,
                "samples": samples,
            }
        )
    return out


# --- for people ------------------------------------------------------------------------------------


def benchmarks_for_project(*, project: Project) -> QuerySet[Benchmark]:
    return Benchmark.objects.filter(project=project).select_related("dataset", "created_by")


def benchmark_get_for_user(*, benchmark_id: int, user: AnyUser) -> Benchmark:
    benchmark = Benchmark.objects.select_related("project", "dataset").filter(pk=benchmark_id).first()
    if benchmark is None:
        raise Http404("No such benchmark.")
    require_role(project=benchmark.project, user=user, minimum=READ)
    return benchmark


def eval_run_get_for_user(*, eval_run_id: int, user: AnyUser) -> EvalRun:
    row = EvalRun.objects.select_related("benchmark", "benchmark__project").filter(pk=eval_run_id).first()
    if row is None:
        raise Http404("No such evaluation.")
    require_role(project=row.benchmark.project, user=user, minimum=READ)
    return row


def eval_runs_for_benchmark(*, benchmark: Benchmark) -> QuerySet[EvalRun]:
    return EvalRun.objects.filter(benchmark=benchmark).select_related("created_by")


def eval_runs_for_project(*, project: Project) -> QuerySet[EvalRun]:
    return EvalRun.objects.filter(benchmark__project=project).select_related("benchmark")


def eval_queue_position(*, eval_run: EvalRun) -> QueuePosition | None:
    """Where a queued evaluation stands on the ``eval`` queue (webapp/core/queues.py); None unless queued."""
    return queue_position(EvalRun.objects.all(), row=eval_run, queue=RUN_EVALUATION.queue)


def eval_status_payload(*, eval_run: EvalRun) -> dict[str, Any]:
    return {
        "id": eval_run.pk, "status": eval_run.status, "label": eval_run.label,
        "problems_done": eval_run.problems_done, "problems_total": eval_run.problems_total,
        "metrics": eval_run.metrics, "ci": eval_run.ci, "error_message": eval_run.error_message,
        "cancel_requested": eval_run.cancel_requested,
    }  # fmt: skip


def problems_for_eval(*, eval_run: EvalRun, correct: bool | None = None) -> QuerySet[EvalProblem]:
    """``correct`` True: every sample right; False: at least one sample wrong; None: all."""
    rows = EvalProblem.objects.filter(eval_run=eval_run)
    if correct is True:
        rows = rows.filter(c=F("n"))
    elif correct is False:
        rows = rows.exclude(c=F("n"))
    return rows


def problem_get_for_user(*, problem_id: int, user: AnyUser) -> EvalProblem:
    row = EvalProblem.objects.select_related("eval_run__benchmark__project").filter(pk=problem_id).first()
    if row is None:
        raise Http404("No such problem.")
    require_role(project=row.eval_run.benchmark.project, user=user, minimum=READ)
    return row


def samples_with_tokens(*, problem: EvalProblem) -> list[dict[str, Any]]:
    """Every sample of a problem in the token view's shape (token_ids, tokens, channels: logprob)."""
    out = []
    sample: EvalSample
    for sample in problem.samples.all():
        ids, channels = unpack_token_arrays(bytes(sample.token_data))
        logprobs = [v if v == v else None for v in channels["logprob"]]  # NaN -> null for JSON
        out.append({
            "id": sample.pk, "index": sample.index, "text": sample.text, "finish_reason": sample.finish_reason,
            "length": sample.length, "reward": sample.reward, "correct": sample.correct,
            "extracted_answer": sample.extracted_answer, "detail": sample.detail, "tokens": list(sample.tokens),
            "token_ids": ids, "channels": {"logprob": logprobs},
        })  # fmt: skip
    return out


def eval_targets(
    *, project: Project, experiment_ids: list[int], checkpoint_ids: list[int]
) -> tuple[list[Experiment], list[Checkpoint]]:
    """The chosen base models and checkpoints, all from ``project``; InvalidInput naming unknown ids."""
    experiments = list(Experiment.objects.filter(project=project, pk__in=experiment_ids))
    checkpoints = list(
        Checkpoint.objects.filter(run__experiment__project=project, pk__in=checkpoint_ids).select_related(
            "run", "run__experiment"
        )
    )
    missing = sorted(set(experiment_ids) - {e.pk for e in experiments})
    missing_ckpt = sorted(set(checkpoint_ids) - {c.pk for c in checkpoints})
    if missing or missing_ckpt:
        message = f"Unknown targets in this project: experiments {missing}, checkpoints {missing_ckpt}."
        raise InvalidInput(message, {"targets": [message]})
    return experiments, checkpoints


def eval_target_choices(*, project: Project) -> list[dict[str, Any]]:
    """What the Evaluate form offers: each experiment's base model and the checkpoints of its runs, those
    whose files ``checkpoint.save_total_limit`` deleted marked ``deleted`` (listed, not offered)."""
    choices = []
    for experiment in Experiment.objects.filter(project=project).order_by("name"):
        model = str(experiment.config.get("model", {}).get("name_or_path", ""))
        checkpoints = Checkpoint.objects.filter(run__experiment=experiment).order_by("run_id", "step")
        choices.append({
            "experiment_id": experiment.pk, "name": experiment.name, "model": model,
            "checkpoints": [{"id": c.pk, "run_id": c.run_id, "step": c.step,
                             "deleted": not checkpoint_has_files(checkpoint=c)} for c in checkpoints],
        })  # fmt: skip
    return choices
