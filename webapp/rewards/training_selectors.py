"""Reads for reward-model training: a reward job (either kind: H6's evaluation jobs share it), the choices a training
form offers, and the preference pairs a job trains on (its worker collects them here).

Pairs come from three sources, each a list of ``{"prompt", "chosen", "rejected"}`` dicts checked by the trainer's
torch-free pairs module: a pairwise annotation task's final decisions, an uploaded pairs file (a Dataset of the
project), or a run's stored rollouts, a correct completion chosen over an incorrect one of the same prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from trainer.errors import DataError
from trainer.rewards.pairs import (
    Outcome,
    PreferencePair,
    pairs_from_dicts,
    pairs_from_jsonl,
    pairs_from_outcomes,
)
from webapp.annotation.models import AnnotationTask, TaskKind
from webapp.annotation.selectors_pairwise import preference_pairs
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Rollout, Run
from webapp.rewards.models import JobKind, RewardJob, RewardModel
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser

MAX_RUN_ROLLOUTS = 200_000  # rollouts read to build pairs from one run (the newest steps first)
RECENT_JOBS = 20


def reward_job_get_for_user(*, job_id: int, user: AnyUser) -> RewardJob:
    """A reward job of either kind; 404 for an outsider (or no such job)."""
    job = (
        RewardJob.objects.select_related("project", "reward_model", "output_version", "created_by")
        .filter(pk=job_id)
        .first()
    )
    if job is None:
        raise Http404("No such reward job.")
    require_role(project=job.project, user=user, minimum=READ)
    return job


def training_jobs_for_reward_model(
    *, reward_model: RewardModel, limit: int = RECENT_JOBS
) -> QuerySet[RewardJob]:
    return RewardJob.objects.filter(reward_model=reward_model, kind=JobKind.TRAIN).order_by("-id")[:limit]


def training_form_choices(*, project: Project) -> dict[str, list[dict[str, Any]]]:
    """What the training form lists: the project's pairwise annotation tasks, uploaded datasets and runs."""
    tasks = AnnotationTask.objects.filter(project=project, kind=TaskKind.PAIRWISE).order_by("-id")[:200]
    datasets = Dataset.objects.filter(project=project).order_by("-id")[:200]
    runs = Run.objects.filter(experiment__project=project).select_related("experiment").order_by("-id")[:200]
    return {
        "annotation_tasks": [{"id": t.pk, "name": t.name} for t in tasks],
        "datasets": [{"id": d.pk, "name": d.name, "rows": d.rows} for d in datasets],
        "runs": [{"id": r.pk, "name": f"#{r.pk} {r.experiment.name}", "status": r.status} for r in runs],
    }


def pairs_for_source(*, project: Project, source: dict[str, Any]) -> list[PreferencePair]:
    """The pairs a job's ``source`` names (``annotation_task``, ``dataset`` or ``run``), checked; DataError when
    there are none or some are bad; Http404 when the source is not the project's."""
    if "annotation_task" in source:
        task = AnnotationTask.objects.filter(pk=source["annotation_task"], project=project).first()
        if task is None:
            raise Http404("No such annotation task in this project.")
        return pairs_from_dicts(preference_pairs(task), source=f"annotation task {task.name!r}")
    if "dataset" in source:
        dataset = Dataset.objects.filter(pk=source["dataset"], project=project).first()
        if dataset is None:
            raise Http404("No such dataset in this project.")
        return pairs_from_jsonl(Path(dataset.path), fmt=dataset.format)
    run = Run.objects.filter(pk=source["run"], experiment__project=project).first()
    if run is None:
        raise Http404("No such run in this project.")
    pairs = pairs_from_outcomes(
        run_outcomes(run=run, verifier=source.get("verifier") or None),
        per_prompt=int(source.get("per_prompt", 8)),
        seed=int(source.get("seed", 0)),
    )
    if not pairs:
        raise DataError(
            f"run #{run.pk} gives no preference pairs: none of its stored prompts has both a correct and an "
            "incorrect completion (with a verifier key: a reward of at least 0.5 and one below). Choose another "
            "run or verifier."
        )
    return pairs


def run_outcomes(*, run: Run, verifier: str | None = None, limit: int = MAX_RUN_ROLLOUTS) -> list[Outcome]:
    """Each stored rollout of ``run`` (newest steps first, at most ``limit``) as an outcome: correct by the
    trainer's own verdict, or, with ``verifier``, when that verifier's raw reward is at least 0.5. Rollouts with
    no verdict (an outside run that sent none) are left out."""
    rows = (
        Rollout.objects.filter(run=run)
        .order_by("-step", "group", "sample_index")
        .values_list("prompt_id", "prompt", "completion", "correct", "rewards")[:limit]
    )
    outcomes = []
    for prompt_id, prompt, completion, correct, rewards in rows.iterator(chunk_size=2000):
        if verifier is not None:
            value = (rewards or {}).get(verifier)
            correct = None if not isinstance(value, int | float) else value >= 0.5
        if correct is not None:
            outcomes.append(Outcome(prompt_id, prompt, completion, bool(correct)))
    return outcomes


def run_verifier_keys(*, run: Run) -> list[str]:
    """The verifier keys of a run's newest stored rollout (what ``verifier`` may name)."""
    newest = Rollout.objects.filter(run=run).order_by("-step").values_list("rewards", flat=True).first()
    return sorted(newest or {})
