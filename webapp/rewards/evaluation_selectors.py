"""Reads of reward-source evaluations: the jobs, and the held-out data a worker scores (pairs, annotation items).

The readers of data trust their caller: the job was checked when it was created (its references belong to its
project) and ``evaluation_inputs_for_worker`` checks them again on the worker before anything is loaded.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from webapp.annotation.machine_scorers import OVERALL, people_means
from webapp.annotation.models import AnnotationItem, AnnotationTask, TaskKind
from webapp.annotation.selectors_pairwise import final_decisions
from webapp.core.errors import InvalidInput
from webapp.core.queues import QueuePosition, queue_position
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Rollout, Run
from webapp.rewards.models import JobKind, RewardJob
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser

MAX_PAIR_FILE_BYTES = 64 * 1024 * 1024  # an uploaded pairs file read by the worker
MAX_ROLLOUTS_FOR_PAIRS = 200_000  # a run's newest rollouts that may give pairs
MAX_AGREEMENT_ITEMS = 5_000


def evaluations_for_project(*, project: Project, limit: int = 100) -> QuerySet[RewardJob]:
    """The project's evaluation jobs, newest first."""
    return (
        RewardJob.objects.filter(project=project, kind=JobKind.EVALUATE)
        .select_related("created_by")
        .order_by("-id")[:limit]
    )


def evaluation_get_for_user(*, job_id: int, user: AnyUser) -> RewardJob:
    """The evaluation job, if ``user`` may read its project; 404 otherwise (outsiders cannot probe ids)."""
    job = (
        RewardJob.objects.select_related("project", "created_by")
        .filter(pk=job_id, kind=JobKind.EVALUATE)
        .first()
    )
    if job is None:
        raise Http404("No such reward evaluation.")
    require_role(project=job.project, user=user, minimum=READ)
    return job


def evaluation_queue_position(*, job: RewardJob) -> QueuePosition | None:
    return queue_position(RewardJob.objects.filter(kind=JobKind.EVALUATE), row=job, queue="eval")


# ---------------------------------------------------------------------------------------------------- pairs


def pairs_for_evaluation(*, project: Project, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Held-out pairs ``{prompt, chosen, rejected, answer}`` (answer: the reference, or None) from the spec's one
    source, at most ``spec['max_pairs']``. InvalidInput when the source is not the project's or holds no pair."""
    limit = int(spec.get("max_pairs") or 2000)
    if spec.get("annotation_task") is not None:
        task = _task(project, int(spec["annotation_task"]), field="pairwise.annotation_task")
        if task.kind != TaskKind.PAIRWISE:
            raise _invalid(
                "pairwise.annotation_task", f"Task {task.pk} is a rubric task: pick a pairwise task."
            )
        pairs = _pairs_from_task(task, limit)
    elif spec.get("dataset") is not None:
        pairs = _pairs_from_file(_dataset(project, int(spec["dataset"])), limit)
    else:
        pairs = _pairs_from_run(_run(project, int(spec["run"])), limit)
    if not pairs:
        raise _invalid("pairwise", "That source holds no preference pair (chosen and rejected) yet.")
    return pairs[:limit]


def _pairs_from_task(task: AnnotationTask, limit: int) -> list[dict[str, Any]]:
    """The people's final left/right decisions as pairs (``preference_pairs``' rule), with each item's reference
    answer, which a verifier needs to score either side."""
    final = final_decisions(task=task)
    pairs = []
    items = AnnotationItem.objects.filter(task=task).order_by("position")
    for item in items.only("pk", "prompt", "completion", "completion_right", "reference_answer").iterator(
        chunk_size=500
    ):
        decision = final.get(item.pk)
        if decision in ("left", "right"):
            chosen, rejected = (
                (item.completion, item.completion_right)
                if decision == "left"
                else (item.completion_right, item.completion)
            )
            pairs.append(
                {
                    "prompt": item.prompt,
                    "chosen": chosen,
                    "rejected": rejected,
                    "answer": item.reference_answer,
                }
            )
            if len(pairs) >= limit:
                break
    return pairs


def _pairs_from_file(dataset: Dataset, limit: int) -> list[dict[str, Any]]:
    path = Path(dataset.path)
    if dataset.format != "jsonl" or path.stat().st_size > MAX_PAIR_FILE_BYTES:
        raise _invalid(
            "pairwise.dataset",
            "A pairs file must be a JSONL upload of at most 64 MB with prompt, chosen, rejected.",
        )
    pairs: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise _invalid("pairwise.dataset", f"Line {number} of {dataset.name} is not JSON.") from None
            fields = [row.get(k) if isinstance(row, dict) else None for k in ("prompt", "chosen", "rejected")]
            if not all(isinstance(f, str) for f in fields):
                raise _invalid(
                    "pairwise.dataset",
                    f"Line {number} of {dataset.name} needs the text fields prompt, chosen and rejected.",
                )
            answer = row.get("answer")
            pairs.append(dict(zip(("prompt", "chosen", "rejected"), fields, strict=True),
                              answer=answer if isinstance(answer, str) else None))  # fmt: skip
            if len(pairs) >= limit:
                break
    return pairs


def _pairs_from_run(run: Run, limit: int) -> list[dict[str, Any]]:
    """For each prompt of the run (newest steps first) its first correct and first incorrect completion."""
    rows = (
        Rollout.objects.filter(run=run, correct__isnull=False)
        .order_by("-step", "group", "sample_index")
        .values_list("step", "prompt_id", "prompt", "completion", "answer", "correct")[
            :MAX_ROLLOUTS_FOR_PAIRS
        ]
    )
    groups: dict[tuple[int, str], dict[bool, tuple[str, str, str | None]]] = defaultdict(dict)
    for step, prompt_id, prompt, completion, answer, correct in rows.iterator(chunk_size=2000):
        groups[(step, prompt_id)].setdefault(bool(correct), (prompt, completion, answer))
    pairs = []
    for sides in groups.values():
        if True in sides and False in sides:
            prompt, chosen, answer = sides[True]
            pairs.append({"prompt": prompt, "chosen": chosen, "rejected": sides[False][1], "answer": answer})
            if len(pairs) >= limit:
                break
    return pairs


# ---------------------------------------------------------------------------------------------------- agreement


def agreement_items(*, project: Project, task_id: int) -> dict[str, Any]:
    """What a source scores to be compared with people: a rubric task's items with the people's mean (0-1), or a
    pairwise task's left/right items with their final decision."""
    task = _task(project, task_id, field="agreement.annotation_task")
    items = AnnotationItem.objects.filter(task=task).order_by("position")[:MAX_AGREEMENT_ITEMS]
    fields = ("pk", "prompt", "completion", "completion_right", "reference_answer")
    if task.kind == TaskKind.PAIRWISE:
        final = final_decisions(task=task)
        rows: list[dict[str, Any]] = [
            {"id": i.pk, "prompt": i.prompt, "left": i.completion, "right": i.completion_right,
             "answer": i.reference_answer, "decision": final.get(i.pk)}
            for i in items.only(*fields) if final.get(i.pk) in ("left", "right")
        ]  # fmt: skip
        return {"task": task.pk, "name": task.name, "kind": "pairwise", "items": rows}
    people = people_means(task=task, criterion=OVERALL)
    rows = [
        {"id": i.pk, "prompt": i.prompt, "completion": i.completion, "answer": i.reference_answer,
         "people": people[i.pk]}
        for i in items.only(*fields) if i.pk in people
    ]  # fmt: skip
    return {"task": task.pk, "name": task.name, "kind": "rubric", "items": rows}


def check_reference(*, project: Project, kind: str, ref_id: int, field: str) -> None:
    """InvalidInput unless ``ref_id`` names a ``kind`` ('dataset', 'annotation_task', 'run') of ``project``."""
    {"dataset": _dataset, "run": _run}.get(kind, lambda p, i: _task(p, i, field=field))(project, ref_id)


def _task(project: Project, task_id: int, *, field: str) -> AnnotationTask:
    task = AnnotationTask.objects.filter(pk=task_id, project=project).first()
    if task is None:
        raise _invalid(field, f"Annotation task {task_id} is not a task of this project.")
    return task


def _dataset(project: Project, dataset_id: int) -> Dataset:
    dataset = Dataset.objects.filter(pk=dataset_id, project=project).first()
    if dataset is None:
        raise _invalid("pairwise.dataset", f"Dataset {dataset_id} is not an uploaded file of this project.")
    return dataset


def _run(project: Project, run_id: int) -> Run:
    run = Run.objects.filter(pk=run_id, experiment__project=project).first()
    if run is None:
        raise _invalid("pairwise.run", f"Run {run_id} is not a run of this project.")
    return run


def _invalid(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, {field: [message]})


def form_choices(*, project: Project) -> dict[str, Any]:
    """What the new-evaluation form offers: the project's saved sources, pair sources and annotation tasks."""
    from trainer.evaluation.suite import builtin_benchmark_names
    from webapp.rewards.models import RewardModelVersion
    from webapp.rubrics.models import Rubric
    from webapp.verification.models import VerifierVersion

    return {
        "rm_versions": list(
            RewardModelVersion.objects.filter(reward_model__project=project).select_related("reward_model")[
                :100
            ]
        ),
        "verifier_versions": list(
            VerifierVersion.objects.filter(definition__project=project).select_related("definition")[:100]
        ),
        "rubrics": list(Rubric.objects.filter(project=project).order_by("name", "id")[:100]),
        "tasks": list(AnnotationTask.objects.filter(project=project).order_by("-id")[:100]),
        "datasets": list(Dataset.objects.filter(project=project, format="jsonl").order_by("-id")[:100]),
        "label_datasets": list(Dataset.objects.filter(project=project).order_by("-id")[:100]),
        "process_aggregates": ["min", "last", "product", "mean"],
        "runs": list(Run.objects.filter(experiment__project=project).order_by("-id")[:50]),
        "benchmarks": builtin_benchmark_names()
        + [f"dataset:{d.pk}" for d in Dataset.objects.filter(project=project).exclude(answer_field="")[:100]],
    }
