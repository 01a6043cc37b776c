"""Writes for benchmarks and evaluations.

Two audiences, as in webapp/experiments/services.py: people (create benchmarks, upload their files,
launch and cancel evaluations; each call checks the actor's role: admins and owners write, viewers
read, outsiders get 404) and the Celery ``eval`` worker (workers/tasks_eval.py: ``eval_mark_started``
... ``eval_fail``; these take ids and trust their caller). Status changes publish ``eval.status`` after
commit (webapp/benchmarks/publish.py).

Evaluation states::

    queued --mark_started--> running --finish--> succeeded | cancelled
       |                        '---fail------> failed
       '--cancel--> cancelled
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import traceback as tb
from pathlib import Path
from typing import IO, Any

from django.db import transaction
from django.utils import timezone

from webapp.benchmarks.config_validation import builtin_config, validate_benchmark_config
from webapp.benchmarks.dispatch import enqueue_evaluation
from webapp.benchmarks.models import (
    EVAL_FINISHED,
    Benchmark,
    BenchmarkSource,
    EvalRun,
    EvalStatus,
    TargetKind,
)
from webapp.benchmarks.publish import publish_eval_event
from webapp.benchmarks.verifier_versions import verifier_spec_for_version
from webapp.core.dispatch import send_after_commit
from webapp.core.errors import Conflict, InvalidInput
from webapp.core.paths import CHECKPOINT_PREFIX
from webapp.datafiles.models import Dataset, dataset_reference
from webapp.datafiles.services import dataset_upload, upload_limits
from webapp.experiments.config_paths import confine_benchmark_config, confine_model
from webapp.experiments.models import Checkpoint, Experiment
from webapp.experiments.selectors import checkpoint_deleted_message, checkpoint_has_files
from webapp.experiments.storable import clean_json
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, OPERATE_RUNS, require_role
from webapp.teams.selectors import AnyUser

logger = logging.getLogger(__name__)

TRACEBACK_CHARS = 20_000


# --- benchmarks -------------------------------------------------------------------------------------


def benchmark_create(
    *,
    project: Project,
    actor: AnyUser,
    name: str,
    source: str,
    config: dict[str, Any],
    description: str = "",
    dataset: Dataset | None = None,
    builtin: str = "",
    verifier_version_id: int | None = None,
) -> Benchmark:
    """A benchmark whose config is ``config`` (BenchmarkConfig fields) with its ``data`` section set by
    ``source``: the dataset's file, a reasoning-gym task (``config["data"]`` as given), or a built-in
    suite entry (its config, with the fields of ``config`` laid over it). ``verifier_version_id`` scores
    with a saved verifier version of the project (webapp/verification) instead of ``config["verifiers"]``."""
    require_role(project=project, user=actor, minimum=EDIT_EXPERIMENTS)
    name = _benchmark_name(project=project, name=name)
    config = dict(config)
    if verifier_version_id is not None:  # a saved version wins over a hand-typed verifier
        config["verifiers"] = [verifier_spec_for_version(project=project, version_id=verifier_version_id)]
    if source == BenchmarkSource.FILE:
        if dataset is None or dataset.project_id != project.pk:
            raise InvalidInput(
                "Pick a data file of this project.", {"dataset": ["Upload or choose a data file."]}
            )
        template = (config.get("data") or {}).get("prompt_template", "{prompt}")
        config["data"] = {
            "source": "file", "path": dataset_reference(dataset), "format": dataset.format,
            "prompt_field": dataset.prompt_field, "answer_field": dataset.answer_field or None,
            "prompt_template": template, "shuffle": False,
        }  # fmt: skip
    elif source == BenchmarkSource.BUILTIN:
        config = builtin_config(builtin, {k: v for k, v in config.items() if k not in ("data", "name")})
        dataset = None
    elif source == BenchmarkSource.REASONING_GYM:
        data = dict(config.get("data") or {})
        data["source"] = "reasoning_gym"
        data.setdefault("shuffle", False)
        config["data"] = data
        dataset = None
    else:
        valid = ", ".join(BenchmarkSource.values)
        raise InvalidInput(
            f"Unknown benchmark source {source!r}; valid: {valid}.", {"source": [f"One of {valid}."]}
        )
    config["name"] = name
    validated = confine_benchmark_config(validate_benchmark_config(config), project=project)
    return Benchmark.objects.create(
        project=project, name=name, description=description, source=source, dataset=dataset,
        builtin=builtin if source == BenchmarkSource.BUILTIN else "", config=validated,
        created_by=actor if actor.is_authenticated else None,
    )  # fmt: skip


def benchmark_delete(*, benchmark: Benchmark, actor: AnyUser) -> None:
    require_role(project=benchmark.project, user=actor, minimum=EDIT_EXPERIMENTS)
    active = benchmark.eval_runs.filter(status__in=[EvalStatus.QUEUED, EvalStatus.RUNNING]).count()
    if active:
        raise Conflict(
            f"Benchmark {benchmark.name!r} has {active} queued or running evaluation(s): cancel them first."
        )
    benchmark.delete()


def benchmark_file_upload(
    *,
    project: Project,
    actor: AnyUser,
    file: IO[bytes],
    filename: str,
    size: int,
    name: str = "",
    problem_field: str = "problem",
    answer_field: str = "answer",
) -> Dataset:
    """Check every row of a benchmark file (bad rows are reported by number, all at once), then store it
    through the datafiles upload (which validates it again with the trainer's loader)."""
    require_role(project=project, user=actor, minimum=EDIT_EXPERIMENTS)
    from trainer.data.row_check import check_data_file
    from trainer.errors import DataError

    problem_field, answer_field = problem_field.strip(), answer_field.strip()
    if not problem_field or not answer_field:
        raise InvalidInput(
            "Map both the problem and the answer field: a benchmark needs reference answers.",
            {"problem_field" if not problem_field else "answer_field": ["This field may not be blank."]},
        )
    basename = Path(filename.replace("\\", "/")).name or "data"
    with tempfile.TemporaryDirectory(prefix="rlvr-bench-") as tmp:
        staged = Path(tmp) / basename
        with staged.open("wb") as out:
            shutil.copyfileobj(file, out)
        try:
            report = check_data_file(
                staged, prompt_field=problem_field, answer_field=answer_field, limits=upload_limits()
            )
        except DataError as err:
            message = str(err).replace(str(staged), basename)
            raise InvalidInput(message, {"file": [message]}) from None
        if not report.ok:
            message = report.summary().replace(str(staged), basename)
            bad = [
                f"row {p.row} ({p.where}): {p.message}".replace(str(staged), basename)
                for p in report.problems
            ]
            raise InvalidInput(message, {"file": [message], "bad_rows": bad})
        with staged.open("rb") as again:
            return dataset_upload(
                project=project, actor=actor, file=again, filename=basename, size=size, name=name,
                prompt_field=problem_field, answer_field=answer_field,
            )  # fmt: skip


def _benchmark_name(*, project: Project, name: str) -> str:
    name = name.strip()
    if not name:
        raise InvalidInput("A benchmark needs a name.", {"name": ["This field may not be blank."]})
    if "/" in name:
        message = "A benchmark name may not contain '/': it is part of metric names (eval/<name>/<metric>)."
        raise InvalidInput(message, {"name": [message]})
    if Benchmark.objects.filter(project=project, name=name).exists():
        message = f"This project already has a benchmark named {name!r}."
        raise InvalidInput(message, {"name": [message]})
    return name


# --- evaluations, as people drive them --------------------------------------------------------------


def eval_launch(
    *,
    benchmark: Benchmark,
    actor: AnyUser,
    experiments: list[Experiment] | None = None,
    checkpoints: list[Checkpoint] | None = None,
) -> list[EvalRun]:
    """Queue one evaluation per target (the base model of each experiment, each checkpoint) on the
    ``eval`` queue, after commit. Targets must belong to the benchmark's project."""
    project = benchmark.project
    require_role(project=project, user=actor, minimum=OPERATE_RUNS)
    experiments, checkpoints = experiments or [], checkpoints or []
    if not experiments and not checkpoints:
        raise InvalidInput(
            "Pick at least one model to evaluate.", {"targets": ["Pick a base model or a checkpoint."]}
        )
    config = validate_benchmark_config(benchmark.config)
    confine_benchmark_config(config, project=project, resolve=True)  # its data file must exist now
    rows: list[EvalRun] = []
    for experiment in experiments:
        if experiment.project_id != project.pk:
            raise InvalidInput(
                "That experiment is not in this project.", {"targets": ["Unknown experiment."]}
            )
        rows.append(EvalRun(
            target_kind=TargetKind.BASE, experiment=experiment, model_path=_base_model(experiment),
            label=f"{experiment.name} (base)",
        ))  # fmt: skip
    for checkpoint in checkpoints:
        run = checkpoint.run
        if run.experiment.project_id != project.pk:
            raise InvalidInput(
                "That checkpoint is not in this project.", {"targets": ["Unknown checkpoint."]}
            )
        if not checkpoint_has_files(checkpoint=checkpoint):  # the worker would fail on a missing model folder
            message = checkpoint_deleted_message(checkpoint=checkpoint)
            raise InvalidInput(message, {"checkpoints": [message]})
        rows.append(EvalRun(
            target_kind=TargetKind.CHECKPOINT, experiment=run.experiment, run=run, checkpoint=checkpoint,
            step=checkpoint.step, model_path=f"{CHECKPOINT_PREFIX}{checkpoint.pk}",
            label=f"{run.experiment.name} run #{run.pk} step {checkpoint.step}",
        ))  # fmt: skip
    with transaction.atomic():
        for row in rows:
            row.benchmark = benchmark
            row.config = config
            row.created_by = actor if actor.is_authenticated else None
            row.save()
            _enqueue_after_commit(row.pk)
    return rows


def _base_model(experiment: Experiment) -> str:
    """The experiment's model.name_or_path, checked as the worker will load it (webapp/core/paths.py)."""
    model = str(experiment.config.get("model", {}).get("name_or_path", "tiny:addition"))
    try:
        confine_model(model, project=experiment.project, resolve=True, field="model.name_or_path")
    except InvalidInput as err:
        message = f"Experiment {experiment.name!r}: {err.message}"
        raise InvalidInput(message, {"targets": [message]}) from None
    return model


def eval_cancel(*, eval_run: EvalRun, actor: AnyUser) -> EvalRun:
    """A queued evaluation is cancelled at once; a running one stops after the problem in progress."""
    require_role(project=eval_run.benchmark.project, user=actor, minimum=OPERATE_RUNS)
    with transaction.atomic():
        row = EvalRun.objects.select_for_update().get(pk=eval_run.pk)
        if row.status == EvalStatus.QUEUED:
            row.status = EvalStatus.CANCELLED
            row.finished_at = timezone.now()
            row.save(update_fields=["status", "finished_at"])
        elif row.status == EvalStatus.RUNNING:
            row.cancel_requested = True
            row.save(update_fields=["cancel_requested"])
        else:
            raise Conflict(
                f"Evaluation {row.pk} has already finished ({row.status}); there is nothing to cancel."
            )
        _publish_status(row)
    return row


def _enqueue_after_commit(eval_run_id: int) -> None:
    def failed(err: Exception) -> None:
        eval_fail(
            eval_run_id=eval_run_id,
            message=f"Could not send the evaluation to a worker ({err}). Check that Redis is reachable "
            "at REDIS_URL and that a worker listens on the 'eval' queue, then launch it again.",
            traceback_text=tb.format_exc(),
        )

    send_after_commit(lambda: enqueue_evaluation(eval_run_id), failed, f"evaluation {eval_run_id}")


# --- evaluations, as the worker reports them --------------------------------------------------------


def eval_mark_started(*, eval_run_id: int, worker: str) -> EvalRun:
    """The worker took it. A finished evaluation (cancelled while queued) comes back unchanged: the caller
    checks ``status == "running"``."""
    with transaction.atomic():
        row = EvalRun.objects.select_for_update().get(pk=eval_run_id)
        if row.status in EVAL_FINISHED:
            return row
        row.status = EvalStatus.RUNNING
        row.started_at = row.started_at or timezone.now()
        row.attempts += 1
        row.worker = worker
        row.save(update_fields=["status", "started_at", "attempts", "worker"])
        _publish_status(row)
    return row


def eval_requeue_after_worker_loss(*, eval_run_id: int) -> bool:
    """The worker evaluating it died: queue it again (it resumes after the problems already stored). One whose
    cancel was requested is cancelled instead. Returns whether it was re-queued."""
    with transaction.atomic():
        row = EvalRun.objects.select_for_update().get(pk=eval_run_id)
        if row.status != EvalStatus.RUNNING:
            return False
        requeue = not row.cancel_requested
        row.status = EvalStatus.QUEUED if requeue else EvalStatus.CANCELLED
        if not requeue:
            row.finished_at = timezone.now()
        row.save(update_fields=["status", "finished_at"])
        _publish_status(row)
    return requeue


def eval_set_total(*, eval_run_id: int, total: int, done: int) -> None:
    with transaction.atomic():
        EvalRun.objects.filter(pk=eval_run_id).update(problems_total=total, problems_done=done)
        publish_eval_event(
            eval_run_id=eval_run_id,
            event="eval.progress",
            payload={"problems_done": done, "problems_total": total, "problems": []},
        )


def eval_finish(
    *, eval_run_id: int, status: str, metrics: dict[str, float], ci: dict[str, Any], timings: dict[str, Any]
) -> EvalRun:
    with transaction.atomic():
        row = EvalRun.objects.select_for_update().get(pk=eval_run_id)
        row.status = status
        row.metrics = clean_json(metrics)
        row.ci = clean_json({k: list(v) for k, v in ci.items()})
        row.timings = clean_json(timings)
        row.finished_at = timezone.now()
        row.save(update_fields=["status", "metrics", "ci", "timings", "finished_at"])
        _publish_status(row)
    return row


def eval_fail(*, eval_run_id: int, message: str, traceback_text: str = "") -> None:
    with transaction.atomic():
        row = EvalRun.objects.select_for_update().get(pk=eval_run_id)
        row.status = EvalStatus.FAILED
        row.error_message = message
        row.traceback = traceback_text[-TRACEBACK_CHARS:]
        row.finished_at = timezone.now()
        row.save(update_fields=["status", "error_message", "traceback", "finished_at"])
        _publish_status(row)


def _publish_status(row: EvalRun) -> None:
    from webapp.benchmarks.selectors import eval_status_payload

    publish_eval_event(eval_run_id=row.pk, event="eval.status", payload=eval_status_payload(eval_run=row))
