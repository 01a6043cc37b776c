"""Writes for experiments and runs.

Two audiences: people (through the API: create experiments, launch, cancel, resume; each checks the
actor's role) and the Celery worker (workers/tasks.py: ``run_mark_started`` ... ``run_fail``; these take
ids, trust their caller and check nothing). Every state change leaves a RunEvent and publishes one
realtime event after commit (webapp/realtime/publish.py).

Run states::

    queued --mark_started--> running --finish--> succeeded | cancelled
       |                        |---fail------> failed
       |                        |---worker lost / stranded (sweep)--> queued (resume_from = last checkpoint)
       |                        |                                 '--> failed (attempts used up; resumable)
       |                        '---cancel, no worker holds its lease--> cancelled
       |--cancel--> cancelled          failed | cancelled --resume--> queued
       '--broker refused the task--> not_queued --queue--> queued   (not_queued --cancel--> cancelled)

A launch, resume or re-queue whose task the broker (Redis) refuses answers 503 (QueueUnavailable,
webapp/core/dispatch.py) and leaves the run ``not_queued``, with its config, output directory and
resume point kept, until someone queues it again (``run_queue``).
"""

from __future__ import annotations

import logging
import traceback as tb
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from trainer.bounds import MAX_NAME_CHARS
from trainer.sinks import RolloutRecord
from webapp.core.dispatch import broker_description, send_after_commit
from webapp.core.errors import Conflict, InvalidInput
from webapp.experiments.config_paths import confine_experiment_config
from webapp.experiments.config_validation import (
    checked_experiment_config,
    collect,
    problems_error,
    validate_experiment_config,
)
from webapp.experiments.dispatch import enqueue_training
from webapp.experiments.models import (
    FINISHED_STATUSES,
    Checkpoint,
    EventLevel,
    Experiment,
    MetricPoint,
    Run,
    RunEvent,
    RunSource,
    RunStatus,
)
from webapp.experiments.phases import phase_done_message
from webapp.experiments.retention import default_retention, parse_retention, prune_run
from webapp.experiments.rollout_writes import rollouts_delete_after, store_rollouts
from webapp.experiments.run_lease import run_lease_held
from webapp.experiments.selectors import run_latest_checkpoint, run_phase_payload, run_status_payload
from webapp.experiments.storable import clean_json, clean_text, finite_or_none
from webapp.realtime.publish import publish_run_event
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, OPERATE_RUNS, require_role
from webapp.teams.selectors import AnyUser
from webapp.verification.selectors import versions_matching_config

logger = logging.getLogger(__name__)

TRACEBACK_LINES = 50  # how much of a failed run's traceback is kept
SUMMARIES_PER_STEP = 32  # rollout summaries sent with each realtime step event


# --- experiments -----------------------------------------------------------------------------------


def experiment_create(
    *, project: Project, actor: AnyUser, name: str, config: Any, description: str = ""
) -> Experiment:
    """A new experiment; every problem of the name, the description and the config in one InvalidInput."""
    require_role(project=project, user=actor, minimum=EDIT_EXPERIMENTS)
    name, validated = _checked_input(project=project, name=name, description=description, config=config)
    assert validated is not None
    return Experiment.objects.create(
        project=project,
        name=name,
        description=description,
        config=validated,
        created_by=actor if actor.is_authenticated else None,
    )


def experiment_update(
    *,
    experiment: Experiment,
    actor: AnyUser,
    name: str | None = None,
    description: str | None = None,
    config: Any = None,
) -> Experiment:
    """Change the given fields. Runs already launched keep the config they were launched with."""
    require_role(project=experiment.project, user=actor, minimum=EDIT_EXPERIMENTS)
    checked_name, validated = _checked_input(
        project=experiment.project, name=experiment.name if name is None else name, description=description,
        config=config, exclude_id=experiment.pk,
    )  # fmt: skip
    experiment.name = checked_name
    if description is not None:
        experiment.description = description
    # A rename alone keeps the saved config as it is (it was checked when saved), with the new name in it.
    experiment.config = validated if validated is not None else {**experiment.config, "name": checked_name}
    experiment.save()
    return experiment


def experiment_delete(*, experiment: Experiment, actor: AnyUser) -> None:
    """Delete an experiment with its runs and their data; refused while one of its runs is active."""
    require_role(project=experiment.project, user=actor, minimum=EDIT_EXPERIMENTS)
    active = experiment.runs.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).count()
    if active:
        raise Conflict(
            f"Experiment {experiment.name!r} has {active} queued or running run(s): cancel them first."
        )
    experiment.delete()


MAX_DESCRIPTION_CHARS = 10_000


def _checked_input(
    *, project: Project, name: str, description: str | None, config: Any, exclude_id: int | None = None
) -> tuple[str, dict[str, Any] | None]:
    """The stripped name and the validated config (None when ``config`` is None: not being changed), or one
    InvalidInput with every problem of the three.

    The experiment's name is its runs' name: it is written into ``config.name`` (which a trainer run logs
    under), so the form asks for one name and an API client cannot give two that disagree."""
    problems: dict[str, list[str]] = {}
    checked = collect(problems, lambda: _experiment_name(project=project, name=name, exclude_id=exclude_id))
    if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
        problems["description"] = [
            f"At most {MAX_DESCRIPTION_CHARS:,} characters (this one has {len(description):,})."
        ]
    if isinstance(config, dict):
        config = {**config, "name": checked or "experiment"}
    validated = (
        None
        if config is None
        else collect(problems, lambda: checked_experiment_config(config, project=project))
    )
    if problems:
        raise problems_error(problems)
    return checked, validated


def _experiment_name(*, project: Project, name: str, exclude_id: int | None = None) -> str:
    name = name.strip()
    if not name:
        raise InvalidInput("An experiment needs a name.", {"name": ["An experiment needs a name."]})
    if len(name) > MAX_NAME_CHARS:
        message = f"At most {MAX_NAME_CHARS} characters (this one has {len(name)})."
        raise InvalidInput(message, {"name": [message]})
    clash = Experiment.objects.filter(project=project, name=name)
    if exclude_id is not None:
        clash = clash.exclude(pk=exclude_id)
    if clash.exists():
        message = f"This project already has an experiment named {name!r}."
        raise InvalidInput(message, {"name": [message]})
    return name


# --- runs, as people drive them --------------------------------------------------------------------


def run_launch(*, experiment: Experiment, actor: AnyUser, retention: Any = None) -> Run:
    """Queue a run of the experiment's current config and send it to a training worker after commit.
    ``retention``: the run's rollout retention policy (webapp/experiments/retention.py); None takes
    ``settings.RLVR_ROLLOUT_RETENTION``."""
    require_role(project=experiment.project, user=actor, minimum=OPERATE_RUNS)
    policy = default_retention() if retention is None else parse_retention(retention)
    config = validate_experiment_config(experiment.config)  # registries may have changed since it was saved
    confine_experiment_config(
        config, project=experiment.project, resolve=True
    )  # what it names must exist now
    with transaction.atomic():
        run = Run.objects.create(
            experiment=experiment,
            config=config,
            status=RunStatus.QUEUED,
            max_steps=config["training"]["max_steps"],
            created_by=actor if actor.is_authenticated else None,
            retention=policy,
        )
        run.output_dir = str(settings.RLVR_RUNS_DIR / f"run-{run.pk}")
        run.config["checkpoint"]["output_dir"] = run.output_dir  # every run writes to its own directory
        run.save(update_fields=["output_dir", "config"])
        run.verifier_versions.set(
            versions_matching_config(project=experiment.project, verifiers=config["verifiers"])
        )
        _event(run.pk, EventLevel.INFO, "launched", f"Launched by {actor} ({run.max_steps} steps).")
        _publish_status(run)
        _enqueue_after_commit(run.pk)
    return run


def run_cancel(*, run: Run, actor: AnyUser) -> Run:
    """A queued run is cancelled at once; a running one is asked to stop at its next step boundary while a
    worker holds its lease, and is cancelled at once when none does (its worker is gone: nothing else would
    ever stop it). When Redis cannot be asked, the request stands and the sweep (workers/sweep.py) cancels
    the run once its lease is seen expired."""
    require_role(project=run.experiment.project, user=actor, minimum=OPERATE_RUNS)
    _refuse_outside(run, "stop")
    running = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).exists()
    held = (
        run_lease_held(run_id=run.pk) if running else None
    )  # asked before the row is locked: Redis may be slow
    with transaction.atomic():
        run = _locked(run.pk)
        if run.status in (RunStatus.QUEUED, RunStatus.NOT_QUEUED):
            run.status = RunStatus.CANCELLED
            run.finished_at = timezone.now()
            run.save(update_fields=["status", "finished_at"])
            _event(run.pk, EventLevel.INFO, "cancelled", f"Cancelled by {actor} before it started.")
            _publish_status(run)
        elif run.status == RunStatus.RUNNING and held is False:
            run.status, run.cancel_requested = RunStatus.CANCELLED, False
            run.finished_at = timezone.now()
            run.save(update_fields=["status", "cancel_requested", "finished_at", *_clear_phase(run)])
            message = (
                f"Cancelled by {actor} at step {run.step}: no worker holds the run (its worker is gone)."
            )
            _event(run.pk, EventLevel.INFO, "cancelled", message, run.step)
            _publish_status(run)
        elif run.status == RunStatus.RUNNING:
            if not run.cancel_requested:
                run.cancel_requested = True
                run.save(update_fields=["cancel_requested"])
                _event(
                    run.pk, EventLevel.INFO, "cancel_requested", f"{actor} asked the run to stop.", run.step
                )
                _publish_status(run)
        else:
            raise Conflict(f"Run {run.pk} has already finished ({run.status}); there is nothing to cancel.")
    return run


def run_resume(*, run: Run, actor: AnyUser) -> Run:
    """Queue a failed or cancelled run again, from its latest checkpoint (or from the start if none)."""
    require_role(project=run.experiment.project, user=actor, minimum=OPERATE_RUNS)
    _refuse_outside(run, "resume")
    with transaction.atomic():
        run = _locked(run.pk)
        if run.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
            raise Conflict(f"Run {run.pk} is {run.status}; only failed or cancelled runs can be resumed.")
        checkpoint = _requeue(run)
        where = f"checkpoint of step {checkpoint.step}" if checkpoint else "the start (no checkpoint)"
        _event(run.pk, EventLevel.INFO, "resumed", f"Resumed by {actor} from {where}.", run.step)
        _publish_status(run)
        _enqueue_after_commit(run.pk)
    return run


def run_set_retention(*, run: Run, actor: AnyUser, retention: Any) -> tuple[Run, int]:
    """Change which rollouts the run keeps and apply it at once (a running run's step writer also picks it
    up at its next step); returns the run and how many rollouts were deleted. Deleting data: admins only."""
    require_role(project=run.experiment.project, user=actor, minimum=OPERATE_RUNS)
    policy = parse_retention(retention)
    with transaction.atomic():
        run = _locked(run.pk)
        before, run.retention = run.retention, policy
        run.save(update_fields=["retention"])
        if before != policy:
            _event(
                run.pk,
                EventLevel.INFO,
                "retention",
                f"{actor} set the rollout retention to {policy}.",
                run.step,
            )
    return run, prune_run(run_id=run.pk)


def _requeue(run: Run) -> Checkpoint | None:
    """Back to queued from the latest checkpoint; steps after it are dropped, as they will be redone."""
    checkpoint = run_latest_checkpoint(run_id=run.pk)
    start = checkpoint.step if checkpoint else 0
    run_truncate_after(run_id=run.pk, step=start)
    run.status = RunStatus.QUEUED
    run.resume_from = checkpoint.path if checkpoint else ""
    run.step = min(run.step, start)
    run.cancel_requested = False
    run.error_message = ""
    run.traceback = ""
    run.finished_at = None
    run.save(
        update_fields=[
            "status",
            "resume_from",
            "step",
            "cancel_requested",
            "error_message",
            "traceback",
            "finished_at",
            *_clear_phase(run),
        ]
    )
    return checkpoint


def run_queue(*, run: Run, actor: AnyUser) -> Run:
    """Send a ``not_queued`` run (its task was refused by the broker) to a worker again; it keeps its
    config, output directory and resume point. Raises QueueUnavailable (503) if the queue is still down."""
    require_role(project=run.experiment.project, user=actor, minimum=OPERATE_RUNS)
    _refuse_outside(run, "queue")
    with transaction.atomic():
        run = _locked(run.pk)
        if run.status != RunStatus.NOT_QUEUED:
            message = f"Run {run.pk} is {run.status}; only a run the task queue refused (not_queued) can be queued again."
            if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
                message += f" Resume it instead: POST /api/runs/{run.pk}/resume/."
            raise Conflict(message)
        run.status = RunStatus.QUEUED
        run.error_message = ""
        run.traceback = ""
        run.save(update_fields=["status", "error_message", "traceback"])
        _event(run.pk, EventLevel.INFO, "queued", f"Queued again by {actor}.", run.step)
        _publish_status(run)
        _enqueue_after_commit(run.pk)
    return run


def _enqueue_after_commit(run_id: int) -> None:
    """Send the run after commit. If the broker refuses, the run becomes ``not_queued`` and the request
    gets a 503 once the commit's sends were tried (webapp/core/dispatch.py)."""

    def refused(err: Exception) -> None:
        run_mark_not_queued(run_id=run_id, error=err)

    message = (
        f"The task queue ({broker_description()}) is unreachable; the run was saved as 'not queued': launch "
        f"it again when the queue is back (POST /api/runs/{run_id}/queue/ or the Queue again button on its page)."
    )
    send_after_commit(
        lambda: enqueue_training(run_id),
        refused,
        f"run {run_id}",
        unsent_message=message,
        extra={"run_id": run_id},
    )


def run_mark_not_queued(*, run_id: int, error: Exception) -> None:
    """The broker refused the run's task: ``not_queued`` with how to queue it again (nothing is deleted)."""
    with transaction.atomic():
        run = _locked(run_id)
        if run.status != RunStatus.QUEUED:  # a worker got it after all, or it was cancelled meanwhile
            return
        run.status = RunStatus.NOT_QUEUED
        run.error_message = clean_text(
            f"Could not send the run to a worker ({type(error).__name__}: {error}). Check that Redis is "
            f"reachable ({broker_description()}, REDIS_URL), then queue the run again: the Queue again button, "
            f"or POST /api/runs/{run_id}/queue/."
        )
        run.traceback = clean_text(
            "\n".join("".join(tb.format_exception(error)).splitlines()[-TRACEBACK_LINES:])
        )
        run.save(update_fields=["status", "error_message", "traceback"])
        _event(run_id, EventLevel.WARNING, "not_queued", run.error_message, run.step)
        _publish_status(run)


# --- runs, as the worker reports them --------------------------------------------------------------


def run_mark_started(*, run_id: int, worker: str) -> Run:
    """The worker took the run. A run that already finished (cancelled while queued) is returned unchanged:
    the caller must check ``run.status == "running"`` before training."""
    with transaction.atomic():
        run = _locked(run_id)
        if run.status in FINISHED_STATUSES:
            return run
        restarted = run.status == RunStatus.RUNNING  # redelivered after a worker died without a requeue
        run.status = RunStatus.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.attempts += 1
        run.worker = worker
        run.save(update_fields=["status", "started_at", "attempts", "worker", *_clear_phase(run)])
        if restarted:
            _event(
                run_id,
                EventLevel.WARNING,
                "redelivered",
                f"Delivered again to {worker}: its earlier worker is gone.",
                run.step,
            )
        _publish_status(run)
    return run


def run_log_attempt(*, run_id: int, plan: str, step: int, resumed: bool) -> None:
    """The attempt's one event ("started", or "resume" when it goes on from an earlier attempt), written once
    the worker has looked at the checkpoints and knows where it starts (``plan``: "resuming from the
    checkpoint at step 30 (...)", "starting again from step 0: no usable checkpoint"), so the log never
    announces a start it then does not make."""
    run = Run.objects.get(pk=run_id)
    level = EventLevel.WARNING if run.attempts > 1 else EventLevel.INFO
    _event(
        run_id,
        level,
        "resume" if resumed else "started",
        f"Attempt {run.attempts} on {run.worker}: {plan}",
        step,
    )


def run_truncate_after(*, run_id: int, step: int) -> None:
    """Delete metrics, rollouts (and their token objects, after commit) and checkpoints of steps after
    ``step`` (before resuming from it)."""
    with transaction.atomic():
        MetricPoint.objects.filter(run_id=run_id, step__gt=step).delete()
        rollouts_delete_after(run_id=run_id, step=step)
        Checkpoint.objects.filter(run_id=run_id, step__gt=step).delete()
        Run.objects.filter(pk=run_id, step__gt=step).update(step=step)


def run_record_step(
    *, run_id: int, step: int, max_steps: int, metrics: dict[str, float], rollouts: list[RolloutRecord]
) -> None:
    """Store one step's metrics and rollouts in one transaction, replacing that step if it exists, then
    publish ``run.step``. The rollouts' token arrays go to the token store first (``store_rollouts``);
    a constant number of queries whatever the batch size. The worker calls this from its step writer
    thread (workers/step_writer.py), off the training step."""
    metric_rows = [
        MetricPoint(run_id=run_id, step=step, key=k, value=finite_or_none(v)) for k, v in metrics.items()
    ]
    with transaction.atomic():
        # Rollouts first: store_rollouts locks the run's row before anything else in the transaction takes
        # a lock on it (the metric rows' foreign key), so a concurrent cancel cannot deadlock with it.
        store_rollouts(run_id=run_id, step=step, records=rollouts, replace_step=True)
        MetricPoint.objects.filter(run_id=run_id, step=step).delete()
        MetricPoint.objects.bulk_create(metric_rows)
        # The first step ends any phase before it (the model build): the page's run.step handler hides it too.
        Run.objects.filter(pk=run_id).update(step=step, max_steps=max_steps, phase="", phase_progress={})
        payload = {
            "step": step,
            "max_steps": max_steps,
            "metrics": {row.key: row.value for row in metric_rows},
            "rollouts": [clean_json(r.summary()) for r in rollouts[:SUMMARIES_PER_STEP]],
        }
        publish_run_event(run_id=run_id, event="run.step", payload=payload)


def run_record_phase(
    *,
    run_id: int,
    name: str,
    label: str,
    subject: str,
    done: int,
    total: int,
    elapsed_s: float,
    eta_s: float | None,
) -> None:
    """Store what the run is doing before its first step (the latest, throttled report of e.g. a built-in
    model's first build, trainer.sinks.PhaseReport) and publish ``run.phase`` after commit, so the page
    shows the build instead of "step 0". One run event when a phase starts (per model built) and one
    when it ends. A run that has finished ignores late reports."""
    with transaction.atomic():
        run = _locked(run_id)
        if run.status in FINISHED_STATUSES:
            return
        before = run.phase_progress if run.phase else {}
        same = run.phase == name and before.get("subject") == subject
        ended_before = same and before.get("done", 0) >= before.get("total", 0)
        run.phase = clean_text(name)[:64]
        run.phase_progress = clean_json(
            {
                "label": label,
                "subject": subject,
                "done": done,
                "total": total,
                "elapsed_s": finite_or_none(elapsed_s),
                "eta_s": None if eta_s is None else finite_or_none(eta_s),
                "updated_at": timezone.now().isoformat(),
            }
        )
        run.save(update_fields=["phase", "phase_progress"])
        if not same:
            _event(run_id, EventLevel.INFO, "phase_started", f"{label}: {total} steps.", run.step)
        if done >= total and not ended_before:
            _event(
                run_id,
                EventLevel.INFO,
                "phase_finished",
                phase_done_message(name, subject, label, elapsed_s),
                run.step,
            )
        publish_run_event(run_id=run_id, event="run.phase", payload={"phase": run_phase_payload(run=run)})


def run_record_checkpoint(*, run_id: int, step: int, path: str) -> None:
    with transaction.atomic():
        Checkpoint.objects.update_or_create(run_id=run_id, step=step, defaults={"path": path})
        _event(run_id, EventLevel.INFO, "checkpoint", f"Checkpoint saved at step {step}: {path}", step)
        publish_run_event(run_id=run_id, event="run.checkpoint", payload={"step": step, "path": path})


def run_finish(*, run_id: int, status: str, final_metrics: dict[str, float]) -> None:
    """The trainer returned: ``succeeded``, or ``cancelled`` when it stopped on a cancel request."""
    if status not in (RunStatus.SUCCEEDED, RunStatus.CANCELLED):
        raise ValueError(
            f"run_finish takes 'succeeded' or 'cancelled', got {status!r}; use run_fail for failures"
        )
    with transaction.atomic():
        run = _locked(run_id)
        run.status = status
        run.finished_at = timezone.now()
        run.final_metrics = clean_json(final_metrics)
        run.save(update_fields=["status", "finished_at", "final_metrics", *_clear_phase(run)])
        _event(run_id, EventLevel.INFO, status, f"Run {status} at step {run.step}.", run.step)
        _publish_status(run)


def run_fail(*, run_id: int, message: str, traceback_text: str) -> None:
    with transaction.atomic():
        run = _locked(run_id)
        run.status = RunStatus.FAILED
        run.finished_at = timezone.now()
        run.error_message = clean_text(message)
        run.traceback = clean_text("\n".join(traceback_text.rstrip().splitlines()[-TRACEBACK_LINES:]))
        run.cancel_requested = False
        run.save(
            update_fields=[
                "status",
                "finished_at",
                "error_message",
                "traceback",
                "cancel_requested",
                *_clear_phase(run),
            ]
        )
        _event(run_id, EventLevel.ERROR, "failed", run.error_message, run.step)
        _publish_status(run)


def run_requeue_after_worker_loss(*, run_id: int) -> None:
    """A worker died mid-run: queue the run again from its last checkpoint (Celery redelivers the task,
    acks_late + reject_on_worker_lost). A run whose cancel was requested is cancelled instead."""
    with transaction.atomic():
        run = _locked(run_id)
        if run.status != RunStatus.RUNNING:
            return
        if run.cancel_requested:
            run.status = RunStatus.CANCELLED
            run.finished_at = timezone.now()
            run.save(update_fields=["status", "finished_at", *_clear_phase(run)])
            _event(
                run_id, EventLevel.WARNING, "cancelled", "The worker was lost while stopping; run cancelled."
            )
        else:
            checkpoint = _requeue(run)
            where = (
                f"the checkpoint of step {checkpoint.step}" if checkpoint else "the start (no checkpoint yet)"
            )
            _event(
                run_id,
                EventLevel.WARNING,
                "worker_lost",
                f"Worker {run.worker or '?'} was lost; re-queued from {where}.",
                run.step,
            )
        _publish_status(run)


def run_recover_stranded(*, run_id: int, reason: str, max_attempts: int) -> str:
    """A ``running`` run that no live worker holds (its task ended without an outcome, or its worker is
    gone; found by workers/sweep.py): re-queued from its last checkpoint while attempts remain, else failed
    and resumable; a run whose cancel was requested is cancelled. Returns what was done ("requeued",
    "failed", "cancelled") or "" when the run was no longer running. The caller sends a re-queued run."""
    with transaction.atomic():
        run = _locked(run_id)
        if run.status != RunStatus.RUNNING:
            return ""
        if run.cancel_requested:
            run.status, run.cancel_requested = RunStatus.CANCELLED, False
            run.finished_at = timezone.now()
            run.save(update_fields=["status", "cancel_requested", "finished_at", *_clear_phase(run)])
            _event(
                run_id,
                EventLevel.WARNING,
                "cancelled",
                f"{reason} It had been asked to stop: cancelled.",
                run.step,
            )
            outcome = "cancelled"
        elif run.attempts < max_attempts:
            checkpoint = _requeue(run)
            where = (
                f"its checkpoint at step {checkpoint.step}" if checkpoint else "step 0 (no checkpoint yet)"
            )
            message = (
                f"{reason} Re-queued to resume from {where} (attempt {run.attempts + 1} of {max_attempts})."
            )
            _event(run_id, EventLevel.WARNING, "recovered", message, run.step)
            outcome = "requeued"
        else:
            checkpoint = run_latest_checkpoint(run_id=run_id)
            where = f"its checkpoint at step {checkpoint.step}" if checkpoint else "step 0 (no checkpoint)"
            run.status = RunStatus.FAILED
            run.finished_at = timezone.now()
            run.error_message = clean_text(
                f"{reason} It had used its {run.attempts} attempt(s); resume it to continue from {where}."
            )
            run.save(update_fields=["status", "finished_at", "error_message", *_clear_phase(run)])
            _event(run_id, EventLevel.ERROR, "failed", run.error_message, run.step)
            outcome = "failed"
        _publish_status(run)
    return outcome


def run_log_event(*, run_id: int, level: str, kind: str, message: str, step: int | None = None) -> None:
    if level not in EventLevel.values:
        raise ValueError(f"level must be one of {', '.join(EventLevel.values)}, got {level!r}")
    _event(run_id, EventLevel(level), kind, message, step)


def _refuse_outside(run: Run, action: str) -> None:
    """Cancel, resume and queue drive this platform's workers; an outside run is driven by its own trainer.
    A Tinker API run is trained by this platform's worker for its client, so it can be stopped here."""
    if run.is_external and not (run.source == RunSource.TINKER and action == "stop"):
        raise Conflict(
            f"Run {run.pk} was trained outside RLVR Studio ({run.get_source_display()}) and sent in through the "
            f"ingest API: {action} it in the trainer that runs it."
        )


# --- shared ----------------------------------------------------------------------------------------


def _clear_phase(run: Run) -> list[str]:
    """Forget the run's phase (a new attempt, or an outcome, makes it stale); returns the fields to save."""
    run.phase, run.phase_progress = "", {}
    return ["phase", "phase_progress"]


def _locked(run_id: int) -> Run:
    return Run.objects.select_for_update().get(pk=run_id)


def _event(run_id: int, level: EventLevel, kind: str, message: str, step: int | None = None) -> RunEvent:
    event = RunEvent.objects.create(
        run_id=run_id, level=level, kind=kind, message=clean_text(message), step=step
    )
    publish_run_event(
        run_id=run_id,
        event="run.log",
        payload={"id": event.pk, "level": level.value, "kind": kind, "message": event.message, "step": step},
    )
    return event


def _publish_status(run: Run) -> None:
    publish_run_event(run_id=run.pk, event="run.status", payload=run_status_payload(run=run))
