"""Writes of reward-model training jobs: start one (web process), and the worker's steps (mark running, store
progress, finish with a new version, fail), plus cancelling either kind of reward job.

``POST /api/projects/<id>/reward-models/<rm id>/train/`` stores a ``RewardJob(kind=train)`` whose ``config`` is
``{"source": {...}, "base_model": ..., "hyper": {...}}`` (the hyper-parameters validated by the trainer's torch-free
``RMHyperParams``; the base model confined like an experiment's model), and sends
``workers.tasks_rewards.train_reward_model`` to the ``training`` queue after commit. The worker collects the pairs
(training_selectors.pairs_for_source), trains into RLVR_HOME/reward-models/job-<id>/ and calls
``training_finish``, which creates the version with ``version_create_trained``. A finished job delivered again is
skipped (tasks are acknowledged late); one left running starts again from the beginning. A process reward model's
job (``labels`` instead of ``source``) starts in training_prm.py and shares the worker's steps here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from trainer.rewards.bt_config import RMHyperParams
from trainer.rewards.pairs import MAX_PER_PROMPT
from webapp.core.dispatch import send_after_commit
from webapp.core.errors import Conflict, InvalidInput
from webapp.experiments.config_paths import confine_model
from webapp.rewards.dispatch_training import enqueue_reward_training
from webapp.rewards.models import JobKind, JobStatus, RewardJob, RewardModel, RewardModelVersion
from webapp.rewards.services import require_family, version_create_trained
from webapp.teams.models import Role
from webapp.teams.permissions import require_role
from webapp.teams.selectors import AnyUser

logger = logging.getLogger(__name__)

START_TRAINING = Role.ADMIN  # owners and admins: a training job holds the training queue for minutes to hours
CANCEL_OTHERS_JOBS = Role.ADMIN
ERROR_CHARS = 20_000
FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
SOURCE_KEYS = ("annotation_task", "dataset", "run")
# The form's defaults: a few minutes on a CPU for the tiny models, sane for a 7B RM on a GPU too.
DEFAULT_HYPER: dict[str, Any] = {"learning_rate": 1e-4, "epochs": 1, "batch_size": 16, "max_length": 512}


def reward_training_start(
    *,
    reward_model: RewardModel,
    actor: AnyUser,
    source: Any,
    base_model: Any,
    hyper: Any = None,
    name: str = "",
) -> RewardJob:
    """Queue a Bradley-Terry training job for a new version of ``reward_model``."""
    project = reward_model.project
    require_role(project=project, user=actor, minimum=START_TRAINING)
    require_family(reward_model=reward_model, process=False)
    config = {
        "source": _checked_source(source),
        "base_model": checked_base_model(base_model, project=project),
        "hyper": _checked_hyper(hyper),
    }
    return training_job_create(reward_model=reward_model, actor=actor, config=config, name=name)


def training_job_create(
    *, reward_model: RewardModel, actor: AnyUser, config: dict[str, Any], name: str
) -> RewardJob:
    """Store a checked training job (a Bradley-Terry or a PRM one) and send it to the training queue after commit."""
    with transaction.atomic():
        job = RewardJob.objects.create(
            project=reward_model.project, kind=JobKind.TRAIN, reward_model=reward_model, config=config,
            name=str(name)[:200] or f"train {reward_model.name}",
            created_by=actor if actor.is_authenticated else None,
            progress={"phase": "queued", "step": 0, "total": 0},
        )  # fmt: skip
        enqueue_after_commit(job.pk)
    return job


def reward_job_cancel(*, job: RewardJob, actor: AnyUser) -> RewardJob:
    """Cancel a training job: a queued one at once, a running one before its next step (nothing is saved).
    Whoever started it, or an admin, may cancel it."""
    if job.created_by_id != getattr(actor, "pk", None):
        require_role(project=job.project, user=actor, minimum=CANCEL_OTHERS_JOBS)
    with transaction.atomic():
        row = RewardJob.objects.select_for_update().get(pk=job.pk)
        if row.status in FINISHED:
            raise Conflict(f"This job has already finished ({row.status}): there is nothing to cancel.")
        if row.status == JobStatus.QUEUED:  # its message may still arrive: the worker then skips it
            row.status, row.finished_at = JobStatus.CANCELLED, timezone.now()
        row.cancel_requested = True
        row.save(update_fields=["status", "finished_at", "cancel_requested"])
    return row


def _checked_source(source: Any) -> dict[str, Any]:
    field = "source"
    if not isinstance(source, dict) or len([k for k in SOURCE_KEYS if k in source]) != 1:
        message = 'Name one source of pairs: {"annotation_task": id}, {"dataset": id} or {"run": id}.'
        raise InvalidInput(message, {field: [message]})
    allowed = {"run": {"run", "verifier", "per_prompt", "seed"}}.get(
        next(k for k in SOURCE_KEYS if k in source)
    )
    extra = set(source) - (allowed or {k for k in SOURCE_KEYS if k in source})
    if extra:
        message = f"Unknown source fields: {', '.join(sorted(map(str, extra)))}."
        raise InvalidInput(message, {field: [message]})
    out: dict[str, Any] = {}
    for key, value in source.items():
        if key == "verifier":
            if value in (None, ""):
                continue
            if not isinstance(value, str) or len(value) > 200:
                raise InvalidInput(
                    "source.verifier is a verifier key (text).", {"source.verifier": ["Not text."]}
                )
            out[key] = value
            continue
        low, high = {"per_prompt": (1, MAX_PER_PROMPT), "seed": (0, 2**32 - 1)}.get(key, (1, 2**31 - 1))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            message = f"source.{key} must be a whole number from {low} to {high}."
            raise InvalidInput(message, {f"source.{key}": [message]})
        out[key] = value
    return out


def checked_base_model(value: Any, *, project: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 1000:
        message = "Name a base model: a tiny: model, checkpoint:<id> of this project, or a folder under the model roots."
        raise InvalidInput(message, {"base_model": [message]})
    return confine_model(value.strip(), project=project, field="base_model")


def _checked_hyper(hyper: Any) -> dict[str, Any]:
    values = {**DEFAULT_HYPER, **(hyper if isinstance(hyper, dict) else {})}
    if hyper is not None and not isinstance(hyper, dict):
        raise InvalidInput("hyper must be an object of hyper-parameters.", {"hyper": ["Not an object."]})
    try:
        return RMHyperParams.model_validate(values).model_dump()
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for e in err.errors():
            fields.setdefault("hyper." + ".".join(str(p) for p in e["loc"]), []).append(e["msg"])
        raise InvalidInput("Some hyper-parameters are invalid: " + "; ".join(
            f"{k}: {v[0]}" for k, v in fields.items()), fields) from None  # fmt: skip


def enqueue_after_commit(job_id: int) -> None:
    def failed(err: Exception) -> None:
        training_fail(
            job_id=job_id,
            message=f"Could not send the job to a worker ({err}). Check that Redis is reachable at REDIS_URL "
            "and that a worker listens on the 'training' queue, then start it again.",
        )

    send_after_commit(lambda: enqueue_reward_training(job_id), failed, f"reward training job {job_id}")


# ---------------------------------------------------------------------------------------------------- the worker


def training_output_dir(*, job: RewardJob) -> Path:
    """Where a job writes its reward model: RLVR_HOME/reward-models/job-<id>/ (chosen here, never by the user)."""
    return Path(settings.RLVR_HOME) / "reward-models" / f"job-{job.pk}"


def training_mark_started(*, job_id: int) -> RewardJob | None:
    """The job, now running from its start; None when it is gone, finished, or cancelled while queued."""
    with transaction.atomic():
        job = RewardJob.objects.select_for_update().filter(pk=job_id, kind=JobKind.TRAIN).first()
        if job is None or job.status in FINISHED:
            return None
        job.status = JobStatus.RUNNING
        job.started_at = job.started_at or timezone.now()
        job.attempts += 1
        # A process reward model's job labels steps first; a Bradley-Terry one collects pairs.
        phase = "labelling steps" if "labels" in job.config else "collecting pairs"
        job.progress = {"phase": phase, "step": 0, "total": 0}
        job.save(update_fields=["status", "started_at", "attempts", "progress"])
    return job


def training_base_model_for_worker(*, job: RewardJob) -> str:
    """The base model as the trainer loads it, confined again on the worker (it trusts nothing stored)."""
    return confine_model(job.config["base_model"], project=job.project, resolve=True, field="base_model")


def training_progress(*, job_id: int, progress: dict[str, Any]) -> bool:
    """Store ``progress``; True when a cancel was asked for (the worker then stops)."""
    RewardJob.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(progress=progress)
    return RewardJob.objects.filter(pk=job_id, cancel_requested=True).exists()


def training_finish(
    *, job: RewardJob, folder: str, result: dict[str, Any], progress: dict[str, Any]
) -> RewardModelVersion:
    """Create the new version from the trained folder and mark the job succeeded, in one transaction."""
    assert job.reward_model is not None  # a training job always has its reward model
    metrics = {
        "held_out_pairwise_accuracy": result.get("held_out_accuracy"),
        "pairs": result.get("train_pairs", 0) + result.get("held_out_pairs", 0),
        "held_out_pairs": result.get("held_out_pairs"),
        "steps": result.get("steps"),
    }
    with transaction.atomic():
        version = version_create_trained(
            job.reward_model, folder, {"max_length": job.config["hyper"]["max_length"], "input_format": "plain"},
            job, metrics,
            job.created_by,
        )  # fmt: skip
        RewardJob.objects.filter(pk=job.pk).update(
            status=JobStatus.SUCCEEDED, result=result, output_version=version, finished_at=timezone.now(),
            progress={**progress, "phase": "succeeded"},
        )  # fmt: skip
    return version


def training_cancelled(*, job_id: int, progress: dict[str, Any]) -> None:
    RewardJob.objects.filter(pk=job_id).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now(), progress={**progress, "phase": "cancelled"}
    )


def training_fail(*, job_id: int, message: str) -> None:
    """Store the error; the job page shows it where the result would be."""
    RewardJob.objects.filter(pk=job_id).update(
        status=JobStatus.FAILED, error=message[:ERROR_CHARS], finished_at=timezone.now()
    )
