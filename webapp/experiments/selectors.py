"""Reads for experiments, runs and what runs produce.

``*_for_user`` / ``*_get_for_user`` selectors check membership (outsiders get 404); the others trust
their caller (the worker, or a view that already checked).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, TypedDict

from django.db import connections
from django.db.models import Avg, ExpressionWrapper, F, IntegerField, Max, Min, Q, QuerySet
from django.http import Http404

from rlvr_client.command_line import redact_command
from webapp.core.queues import QueuePosition, queue_position
from webapp.core.tasks_by_name import RUN_TRAINING
from webapp.experiments.models import Checkpoint, Experiment, MetricPoint, Rollout, Run, RunEvent
from webapp.experiments.token_blobs import rollout_token_arrays
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser

MAX_METRIC_POINTS = 1000  # per key (about one per pixel of a chart); above this, steps are bucketed


class MetricSeries(TypedDict):
    """One key's points column by column (Plotly's x/y arrays): point i is ``step[i]``, ``value[i]``, ..."""

    step: list[int]  # the last step of each bucket
    value: list[float | None]  # each bucket's mean (the value itself when not downsampled); None: all NaN
    min: list[float | None]
    max: list[float | None]


@dataclass(frozen=True)
class RolloutWithTokens:
    """A rollout with its per-token arrays unpacked. A channel the trainer did not record is None."""

    rollout: Rollout
    token_ids: list[int]
    channels: dict[str, list[float | None] | None]
    tokens: list[str]


# --- for the worker --------------------------------------------------------------------------------


def run_get(*, run_id: int) -> Run:
    return Run.objects.select_related("experiment", "experiment__project").get(pk=run_id)


def run_should_stop(*, run_id: int) -> bool:
    """True once someone asked the run to stop (checked by the worker at each step boundary)."""
    return Run.objects.filter(pk=run_id).filter(Q(cancel_requested=True) | Q(status="cancelled")).exists()


def run_latest_checkpoint(*, run_id: int) -> Checkpoint | None:
    return Checkpoint.objects.filter(run_id=run_id).order_by("-step").first()


def run_status_payload(*, run: Run) -> dict[str, Any]:
    """What a ``run.status`` realtime event carries (and what a websocket client is sent on connect)."""
    return {
        "status": run.status,
        "step": run.step,
        "max_steps": run.max_steps,
        "cancel_requested": run.cancel_requested,
        "attempts": run.attempts,
        "worker": run.worker,
        "error_message": run.error_message,
        "resume_from": run.resume_from,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "phase": run_phase_payload(run=run),
        "rollouts_dropped": run.rollouts_dropped,
    }


def run_phase_payload(*, run: Run) -> dict[str, Any] | None:
    """The run's phase before its first step (``run.phase`` events, the API, the page), or None:
    ``{name, label, subject, done, total, elapsed_s, eta_s, updated_at}``."""
    if not run.phase:
        return None
    return {"name": run.phase, **run.phase_progress}


# --- membership-checked lookups --------------------------------------------------------------------


def experiment_get_for_user(*, experiment_id: int, user: AnyUser) -> Experiment:
    experiment = Experiment.objects.select_related("project").filter(pk=experiment_id).first()
    if experiment is None:
        raise Http404("No such experiment.")
    require_role(project=experiment.project, user=user, minimum=READ)
    return experiment


def run_get_for_user(*, run_id: int, user: AnyUser) -> Run:
    run = Run.objects.select_related("experiment", "experiment__project").filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run.")
    require_role(project=run.experiment.project, user=user, minimum=READ)
    return run


def experiments_for_project(*, project: Project) -> QuerySet[Experiment]:
    return Experiment.objects.filter(project=project).select_related("project")


def runs_for_project(
    *, project: Project, experiment_id: int | None = None, status: str | None = None
) -> QuerySet[Run]:
    runs = Run.objects.filter(experiment__project=project).select_related("experiment", "experiment__project")
    if experiment_id is not None:
        runs = runs.filter(experiment_id=experiment_id)
    if status:
        runs = runs.filter(status=status)
    return runs


def runs_for_user(*, user: AnyUser, status: str | None = None) -> QuerySet[Run]:
    if not user.is_authenticated:
        return Run.objects.none()
    runs = Run.objects.filter(experiment__project__memberships__user=user)
    if status:
        runs = runs.filter(status=status)
    return runs.select_related("experiment", "experiment__project")


# --- what a run produced ---------------------------------------------------------------------------


def metric_keys_for_run(*, run: Run) -> list[str]:
    return list(MetricPoint.objects.filter(run=run).order_by("key").values_list("key", flat=True).distinct())


def metrics_for_run(
    *,
    run: Run,
    keys: list[str] | None = None,
    since_step: int | None = None,
    max_points: int = MAX_METRIC_POINTS,
) -> dict[str, MetricSeries]:
    """Each key's series after ``since_step``, ordered by step, at most ``max_points`` points per key.

    A long run is downsampled in SQL: steps fall into buckets of ``width`` consecutive steps
    (``(step - first) / width``, integer division, GROUP BY key and bucket); a bucket reports its last
    step, mean, min and max, so a one-step spike survives as the bucket's max. Not downsampled, a point's
    min and max are its value.

    Each series is columns (Plotly's x/y arrays) built by ``zip`` from the rows: no per-point dict to
    build and render as JSON, which for 20 keys x 1,000 points cost about as much as the query.
    """
    points = MetricPoint.objects.filter(run=run)
    if keys:
        points = points.filter(key__in=keys)
    if since_step is not None:
        points = points.filter(step__gt=since_step)
    bounds = points.aggregate(first=Min("step"), last=Max("step"))
    if bounds["first"] is None:
        return {}
    width = max(1, math.ceil((bounds["last"] - bounds["first"] + 1) / max(1, max_points)))
    if width == 1:
        rows = points.order_by("key", "step").values_list("key", "step", "value")
        return {key: _series_of_points(key_rows) for key, key_rows in groupby(rows, key=itemgetter(0))}
    bucket = ExpressionWrapper((F("step") - bounds["first"]) / width, output_field=IntegerField())
    bucketed = (
        points.annotate(bucket=bucket)
        .values("key", "bucket")
        .annotate(last_step=Max("step"), mean=Avg("value"), low=Min("value"), high=Max("value"))
        .values_list("key", "last_step", "mean", "low", "high")
        .order_by()  # sorted below: sorting text keys in SQL costs more than sorting the result here
    )
    bucket_rows = _driver_rows(bucketed)
    bucket_rows.sort()  # (key, last_step) is unique, so comparing rows never reaches a None mean, min or max
    return {key: _series_of_buckets(key_rows) for key, key_rows in groupby(bucket_rows, key=itemgetter(0))}


def _driver_rows(queryset: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The rows as the database driver returns them, skipping Django's per-value converters.

    psycopg and sqlite3 already give int and float for MAX(step) and AVG/MIN/MAX(value); Django would
    still call an int()/float() converter on each aggregate: 80,000 calls for 20 keys x 1,000 buckets,
    about 15 ms of the endpoint on PostgreSQL.
    """
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _series_of_points(rows: Iterable[tuple[str, int, float | None]]) -> MetricSeries:
    _, steps, values = zip(*rows, strict=True)
    return {"step": list(steps), "value": list(values), "min": list(values), "max": list(values)}


def _series_of_buckets(
    rows: Iterable[tuple[str, int, float | None, float | None, float | None]],
) -> MetricSeries:
    _, steps, means, lows, highs = zip(*rows, strict=True)
    return {"step": list(steps), "value": list(means), "min": list(lows), "max": list(highs)}


def rollouts_for_run(
    *,
    run: Run,
    step: int | None = None,
    reward_min: float | None = None,
    reward_max: float | None = None,
    correct: bool | None = None,
    finish_reason: str | None = None,
    search: str | None = None,
) -> QuerySet[Rollout]:
    """A run's rollouts, filtered, without the heavy per-token columns (see ``rollout_detail``).

    ``search`` matches the prompt or the completion case-insensitively (``UPPER(col) LIKE UPPER('%x%')``
    on PostgreSQL, which migration 0007's trigram indexes serve; three characters or more use them) or
    equals a prompt id."""
    rollouts = Rollout.objects.filter(run=run).defer("tokens", "token_data", "details")
    if step is not None:
        rollouts = rollouts.filter(step=step)
    if reward_min is not None:
        rollouts = rollouts.filter(reward__gte=reward_min)
    if reward_max is not None:
        rollouts = rollouts.filter(reward__lte=reward_max)
    if correct is not None:
        rollouts = rollouts.filter(correct=correct)
    if finish_reason:
        rollouts = rollouts.filter(finish_reason=finish_reason)
    if search:
        rollouts = rollouts.filter(
            Q(completion__icontains=search) | Q(prompt__icontains=search) | Q(prompt_id=search)
        )
    return rollouts.order_by("step", "group", "sample_index")


def rollout_detail(*, run: Run, rollout_id: int) -> RolloutWithTokens:
    rollout = Rollout.objects.filter(run=run, pk=rollout_id).first()
    if rollout is None:
        raise Http404("No such rollout in this run.")
    arrays = rollout_token_arrays(rollout)  # one ranged read of the token store (inline for older rows)
    return RolloutWithTokens(
        rollout=rollout,
        token_ids=arrays.token_ids,
        channels={name: _channel_or_none(values) for name, values in arrays.channels.items()},
        tokens=arrays.tokens,
    )


def _channel_or_none(values: list[float]) -> list[float | None] | None:
    """NaN and infinities -> None for JSON; an all-NaN channel (not recorded for this rollout) -> None."""
    cleaned: list[float | None] = [v if math.isfinite(v) else None for v in values]
    if values and all(v is None for v in cleaned):
        return None
    return cleaned


def checkpoints_for_run(*, run: Run) -> QuerySet[Checkpoint]:
    return Checkpoint.objects.filter(run=run).order_by("step")


def run_origin(*, run: Run) -> dict[str, str] | None:
    """Where an outside run came from, for its page: library and version, host, command; None for a native run."""
    if not run.is_external:
        return None
    info = run.source_info if isinstance(run.source_info, dict) else {}

    def text(name: str, limit: int = 300) -> str:
        value = info.get(name)
        return str(value)[:limit] if isinstance(value, (str, int, float)) else ""

    version = text("version", 60)
    return {
        "label": run.get_source_display() + (f" {version}" if version else ""),
        # redacted again here: runs stored before the client redacted, and clients that never did
        "host": text("host", 255),
        "command": redact_command(text("command", 1000)),
        "name": text("run_name", 200),
    }


def run_queue_position(*, run: Run) -> QueuePosition | None:
    """Where a queued run stands on the ``training`` queue (webapp/core/queues.py); None unless queued."""
    return queue_position(Run.objects.all(), row=run, queue=RUN_TRAINING.queue)


def checkpoint_has_files(*, checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's folder is still on this server. A run keeps only its newest
    ``checkpoint.save_total_limit`` checkpoints: the trainer deletes older folders, their rows stay (the
    over-training plots and the evaluations of those steps refer to them), so only the disk can tell."""
    return Path(checkpoint.path).is_dir()


def checkpoint_deleted_message(*, checkpoint: Checkpoint) -> str:
    return (
        f"Checkpoint {checkpoint.pk} (run #{checkpoint.run_id}, step {checkpoint.step}) was deleted: a run keeps only "
        "its newest checkpoint.save_total_limit checkpoints. Pick a newer checkpoint of the run, or raise "
        "checkpoint.save_total_limit for the next run to keep more."
    )


def events_for_run(*, run: Run, after_id: int | None = None) -> QuerySet[RunEvent]:
    events = RunEvent.objects.filter(run=run)
    if after_id is not None:
        events = events.filter(pk__gt=after_id)
    return events.order_by("id")
