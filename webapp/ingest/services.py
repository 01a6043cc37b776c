"""Apply one ingest batch: make the outside run on its first batch, then store every item idempotently.

Idempotent because the client resends a batch whose answer it did not hear (rlvr_client/spool.py):

- the run: found by (project, key); made, with its experiment, by the first batch that names it;
- metrics: one value per (run, step, key), the last one sent wins;
- rollouts: one per (run, step, group, sample_index), through the native trainer's own write path
  (``webapp.experiments.rollout_writes.store_rollouts``, token arrays in the token store);
- checkpoints: one per (run, step); the outcome: the first ``finish`` sets it, a repeat changes nothing.

Each step a batch touches publishes ``run.step`` after commit, so an open run page draws it live.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone

from rlvr_client.command_line import redact_command
from trainer.sinks import RolloutRecord
from webapp.core.errors import ApplicationError, Conflict
from webapp.experiments.metric_summaries import forget_stored_summaries
from webapp.experiments.models import (
    FINISHED_STATUSES,
    Checkpoint,
    EventLevel,
    Experiment,
    MetricPoint,
    Run,
    RunSource,
    RunStatus,
)
from webapp.experiments.retention import parse_retention, prune_steps, run_policy
from webapp.experiments.rollout_writes import store_rollouts
from webapp.experiments.selectors import run_status_payload
from webapp.experiments.services import SUMMARIES_PER_STEP, run_log_event
from webapp.experiments.storable import clean_json, clean_text, finite_or_none
from webapp.ingest.schema import BatchIn, RolloutIn, RunIn
from webapp.realtime.publish import publish_run_event
from webapp.teams.models import Project
from webapp.teams.permissions import OPERATE_RUNS, require_role
from webapp.teams.selectors import AnyUser

SOURCE_LABELS = {"trl": "TRL", "verl": "verl", "script": "a script", "import": "an imported file"}


@dataclass(frozen=True)
class BatchResult:
    run: Run
    created: bool
    metrics: int
    rollouts: int
    checkpoints: int

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run.pk,
            "url": f"/runs/{self.run.pk}/",
            "created": self.created,
            "status": self.run.status,
            "accepted": {"metrics": self.metrics, "rollouts": self.rollouts, "checkpoints": self.checkpoints},
        }


class UnknownProject(ApplicationError):
    """The batch names no project the sender belongs to. The same answer whether the project does not
    exist or the sender is an outsider: whether a project exists is itself private."""

    status_code = 404


def ingest_project(*, project: str, user: AnyUser) -> Project:
    """The project a batch names (slug, or id), if the user may operate its runs."""
    found = Project.objects.filter(slug=project).first()
    if found is None and project.isdigit():
        found = Project.objects.filter(pk=int(project)).first()
    try:
        if found is None:
            raise Http404
        require_role(project=found, user=user, minimum=OPERATE_RUNS)
    except Http404:
        raise UnknownProject(
            f"No project {project!r} among yours: name it by its slug (GET /api/projects/ lists yours), and ask "
            "its owner to add you with the admin role.",
            {"fields": {"run.project": ["no such project among yours"]}},
        ) from None
    return found


def ingest_batch(*, user: AnyUser, batch: BatchIn) -> BatchResult:
    project = ingest_project(project=batch.run.project, user=user)
    run, created = _run_for(project=project, user=user, described=batch.run)
    by_step: dict[int, list[RolloutRecord]] = defaultdict(list)
    for rollout in batch.rollouts:
        by_step[rollout.step].append(_record(rollout))
    for step, records in sorted(by_step.items()):  # each step's token object is written before its rows
        store_rollouts(run_id=run.pk, step=step, records=records, replace_step=False)
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        _store_metrics(run, batch)
        for checkpoint in batch.checkpoints:
            Checkpoint.objects.update_or_create(
                run=run, step=checkpoint.step, defaults={"path": clean_text(checkpoint.uri)}
            )
        before = run.step
        steps = [p.step for p in batch.metrics] + list(by_step) + [c.step for c in batch.checkpoints]
        if steps and max(steps) > run.step:
            run.step = max(steps)
            run.save(update_fields=["step"])
        _publish_steps(run, batch, by_step)
        _count_dropped(run, batch)
        if batch.finish is not None:
            _finish(run, batch)
    _prune(run, before)
    return BatchResult(run, created, len(batch.metrics), len(batch.rollouts), len(batch.checkpoints))


def _prune(run: Run, before: int) -> None:
    """Apply the run's retention policy to the steps this batch moved out of its recent window (only
    those: a long run is not rescanned on every batch)."""
    policy = run_policy(run)
    if policy["keep"] != "all" and run.step > before:
        recent = int(policy["recent_steps"])
        prune_steps(run_id=run.pk, policy=policy, after=max(0, before - recent), through=run.step - recent)


def _run_for(*, project: Project, user: AnyUser, described: RunIn) -> tuple[Run, bool]:
    existing = Run.objects.filter(experiment__project=project, external_key=described.key).first()
    if existing is not None:
        if existing.source == RunSource.NATIVE:  # unreachable through the API (native runs have no key)
            raise Conflict(
                f"Run {existing.pk} is trained by RLVR Studio itself; outside data cannot be added to it."
            )
        return existing, False
    retention = parse_retention(described.retention) if described.retention is not None else None
    try:
        with transaction.atomic():
            experiment, _ = Experiment.objects.get_or_create(
                project=project,
                name=clean_text(described.experiment or described.name),
                defaults={
                    "config": clean_json(described.config),
                    "created_by": user if user.is_authenticated else None,
                    "description": f"Runs sent in from {SOURCE_LABELS[described.source]}.",
                },
            )
            run = Run.objects.create(
                experiment=experiment,
                status=RunStatus.RUNNING,
                config=clean_json(described.config),
                max_steps=described.max_steps,
                created_by=user if user.is_authenticated else None,
                started_at=timezone.now(),
                source=described.source,
                source_info=_stored_source_info(described),
                external_key=described.key,
                worker=clean_text(str(described.source_info.get("host", "")))[:255],
                **({"retention": retention} if retention is not None else {}),
            )
            run_log_event(
                run_id=run.pk, level=EventLevel.INFO, kind="started", message=_origin_text(run), step=0
            )
            publish_run_event(run_id=run.pk, event="run.status", payload=run_status_payload(run=run))
    except IntegrityError:  # the same key arrived twice at once: the other request made the run
        return Run.objects.get(experiment__project=project, external_key=described.key), False
    return run, True


def _stored_source_info(described: RunIn) -> dict[str, Any]:
    """The run's origin as stored: its name (a Run has none of its own) and the command with secret-looking
    values redacted, whatever the client did (rlvr_client/command_line.py)."""
    info: dict[str, Any] = clean_json({**described.source_info, "run_name": described.name})
    if isinstance(info.get("command"), str):
        info["command"] = redact_command(info["command"])
    return info


def _origin_text(run: Run) -> str:
    info = run.source_info
    library = SOURCE_LABELS[run.source]
    version = f" {info['version']}" if isinstance(info.get("version"), str) else ""
    host = f" on {info['host']}" if isinstance(info.get("host"), str) and info["host"] else ""
    return f"Outside run sent in from {library}{version}{host} through the ingest API."


def _record(r: RolloutIn) -> RolloutRecord:
    length = len(r.tokens) if r.tokens is not None else len(r.token_ids or [])
    nan = float("nan")
    return RolloutRecord(
        step=r.step,
        prompt_id=r.prompt_id or str(r.group),
        group=r.group,
        sample_index=r.sample_index,
        prompt=r.prompt,
        completion=r.completion,
        finish_reason=r.finish_reason or "eos",
        reward=nan if r.reward is None else r.reward,
        rewards={k: (nan if v is None else v) for k, v in r.rewards.items()},
        correct=r.correct,  # type: ignore[arg-type]  # None: the outside trainer did not say
        details=r.details,
        advantage=nan if r.advantage is None else r.advantage,
        token_ids=list(r.token_ids) if r.token_ids is not None else [-1] * length,
        tokens=list(r.tokens) if r.tokens is not None else [str(t) for t in (r.token_ids or [])],
        token_values={k: [nan if v is None else v for v in values] for k, values in r.token_values.items()},
        answer=r.answer,
    )


def _store_metrics(run: Run, batch: BatchIn) -> None:
    latest: dict[tuple[int, str], float | None] = {}
    for point in batch.metrics:  # a key repeated within the batch: the later value wins
        for key, value in point.values.items():
            latest[(point.step, clean_text(key))] = finite_or_none(value) if value is not None else None
    rows = [MetricPoint(run=run, step=step, key=key, value=value) for (step, key), value in latest.items()]
    forget_stored_summaries(run_id=run.pk)  # an outside run's metrics may come after its end
    MetricPoint.objects.bulk_create(
        rows,
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["run", "step", "key"],
        update_fields=["value"],
    )


def _publish_steps(run: Run, batch: BatchIn, by_step: dict[int, list[RolloutRecord]]) -> None:
    metrics: dict[int, dict[str, float | None]] = defaultdict(dict)
    for point in batch.metrics:
        metrics[point.step].update({clean_text(k): v for k, v in point.values.items()})
    for step in sorted(set(metrics) | set(by_step))[-50:]:  # the page asks the API for any it missed
        summaries = [clean_json(r.summary()) for r in by_step.get(step, [])[:SUMMARIES_PER_STEP]]
        payload = {
            "step": step,
            "max_steps": run.max_steps,
            "metrics": metrics.get(step, {}),
            "rollouts": summaries,
        }
        publish_run_event(run_id=run.pk, event="run.step", payload=payload)


def dropped_text(count: int) -> str:
    """What the run's events and page say about rollouts its client could not deliver."""
    return (
        f"{count} rollout{'s' if count != 1 else ''} could not be delivered: the server refused "
        f"{'them' if count != 1 else 'it'}, and the ingest client kept {'them' if count != 1 else 'it'} in its "
        "spool's rejected/ folder with the reason."
    )


def _count_dropped(run: Run, batch: BatchIn) -> None:
    """Keep the largest count the client reported (a resent batch repeats it); a rise is a warning event
    and a status event, so an open page shows it at once."""
    reported = batch.rollouts_dropped
    if reported is None or reported <= run.rollouts_dropped:
        return
    run.rollouts_dropped = reported
    run.save(update_fields=["rollouts_dropped"])
    run_log_event(
        run_id=run.pk,
        level=EventLevel.WARNING,
        kind="rollouts_dropped",
        message=dropped_text(reported),
        step=run.step,
    )
    publish_run_event(run_id=run.pk, event="run.status", payload=run_status_payload(run=run))


def _finish(run: Run, batch: BatchIn) -> None:
    outcome = batch.finish
    assert outcome is not None
    if run.status in FINISHED_STATUSES:  # a resent batch: the first outcome stands
        return
    run.status = outcome.status
    run.finished_at = timezone.now()
    run.final_metrics = clean_json({k: v for k, v in outcome.final_metrics.items() if v is not None})
    run.error_message = clean_text(outcome.error_message)
    run.save(update_fields=["status", "finished_at", "final_metrics", "error_message"])
    level = EventLevel.ERROR if outcome.status == RunStatus.FAILED else EventLevel.INFO
    message = f"Run {outcome.status} at step {run.step}." + (
        f" {run.error_message}" if run.error_message else ""
    )
    if run.rollouts_dropped:  # a success with rollouts missing is not a silent one
        level = EventLevel.WARNING if level == EventLevel.INFO else level
        message += " " + dropped_text(run.rollouts_dropped)
    run_log_event(run_id=run.pk, level=level, kind=outcome.status, message=message, step=run.step)
    publish_run_event(run_id=run.pk, event="run.status", payload=run_status_payload(run=run))
