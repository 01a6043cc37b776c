"""Which rollouts a run keeps: its retention policy, checked here, and the pruning that applies it.

A long run stores 256 rollouts a step for thousands of steps, nearly all of which nobody opens again; the
policy says which to keep once a step is no longer among the run's newest ``recent_steps``::

    {"keep": "all"}                                                # the default: nothing is deleted
    {"keep": "every_n_steps", "every_n_steps": 10, "recent_steps": 20}  # all of every 10th step
    {"keep": "sample_per_step", "sample_per_step": 8, "recent_steps": 20}  # 8 of each step

``sample_per_step`` keeps the K rollouts of a step whose hash of (run, step, group, sample_index) is
smallest: the same K whatever order they were written in and however often pruning runs, spread over
the step's prompts rather than the first group's. Whatever the policy, a rollout an annotation item
points at, or one a rescore of the run listed as changed, is never deleted, and nothing is pruned while
a rescore of the run is still going (it reads the rollouts it listed at its start).

Pruning runs on the training worker's step writer after each step (only the steps that just left the
recent window: a handful of queries) and at the end of the run, and in the request that changes a run's
policy. It deletes rows and, after commit, token objects no row points at any more; an object of which
only a few rollouts are kept is rewritten with just those, so the kept rollouts of a pruned step cost
their own bytes, not the whole step's.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Max
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from webapp.annotation.models import AnnotationItem
from webapp.core.errors import InvalidInput
from webapp.experiments.models import Rollout, Run
from webapp.experiments.rollout_writes import delete_objects_after_commit, lock_run
from webapp.experiments.token_store import step_object_key, token_store
from webapp.verification.models import JOB_FINISHED, JobKind, VerificationJob

logger = logging.getLogger(__name__)

MAX_EVERY_N_STEPS = 100_000
MAX_SAMPLE_PER_STEP = 4_096
MAX_RECENT_STEPS = 100_000
DEFAULT_RECENT_STEPS = (
    10  # filled into a policy that thins steps out without saying how many recent ones stay whole
)
PRUNE_CHUNK_STEPS = 16  # steps per transaction when a whole run is pruned: at most ~4,000 rows at once
COMPACT_BELOW = 0.5  # an object of which less than this share of bytes is still used is rewritten
KEEP_ALL: dict[str, Any] = {"keep": "all"}


class RetentionPolicy(BaseModel):
    """A run's retention policy; the numbers that a ``keep`` mode does not read must be left out."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    keep: Literal["all", "every_n_steps", "sample_per_step"] = "all"
    every_n_steps: int | None = Field(
        None, ge=1, le=MAX_EVERY_N_STEPS, description="keep every N-th step whole"
    )
    sample_per_step: int | None = Field(
        None, ge=1, le=MAX_SAMPLE_PER_STEP, description="keep K rollouts of a step"
    )
    recent_steps: int | None = Field(
        None, ge=0, le=MAX_RECENT_STEPS, description="the newest R steps stay whole"
    )


def parse_retention(value: Any, *, field: str = "retention") -> dict[str, Any]:
    """The policy with its defaults filled in, as stored in ``Run.retention``; InvalidInput naming
    ``<field>.<key>`` otherwise. ``{}`` (what runs made before retention hold) means keep all."""
    if not isinstance(value, dict):
        message = f'{field} must be an object such as {{"keep": "every_n_steps", "every_n_steps": 10}}.'
        raise InvalidInput(message, {field: [message]})
    try:
        policy = RetentionPolicy.model_validate(value)
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for e in err.errors():
            path = ".".join([field, *(str(p) for p in e["loc"])])
            fields.setdefault(path, []).append(e["msg"])
        raise InvalidInput(_summary(fields), fields) from None
    fields = _mode_errors(policy, field)
    if fields:
        raise InvalidInput(_summary(fields), fields)
    if policy.keep == "all":
        return dict(KEEP_ALL)
    recent = DEFAULT_RECENT_STEPS if policy.recent_steps is None else policy.recent_steps
    return {**policy.model_dump(exclude_none=True), "recent_steps": recent}


def _mode_errors(policy: RetentionPolicy, field: str) -> dict[str, list[str]]:
    needed = {"every_n_steps": policy.every_n_steps, "sample_per_step": policy.sample_per_step}
    errors: dict[str, list[str]] = {}
    for name, number in needed.items():
        if policy.keep == name and number is None:
            errors[f"{field}.{name}"] = [
                f'keep: {name} needs {name}, e.g. {{"keep": "{name}", "{name}": 10}}.'
            ]
        elif policy.keep != name and number is not None:
            errors[f"{field}.{name}"] = [
                f"{name} is only read with keep: {name} (this policy has keep: {policy.keep})."
            ]
    if policy.keep == "all" and policy.recent_steps is not None:
        errors[f"{field}.recent_steps"] = [
            "keep: all deletes nothing, so recent_steps has nothing to protect: leave it out."
        ]
    return errors


def _summary(fields: dict[str, list[str]]) -> str:
    path, messages = next(iter(fields.items()))
    more = len(fields) - 1
    return f"Invalid retention policy: {path}: {messages[0]}" + (f" (and {more} more)" if more else "")


def default_retention() -> dict[str, Any]:
    """``settings.RLVR_ROLLOUT_RETENTION``, the policy of a run launched without one."""
    try:
        return parse_retention(settings.RLVR_ROLLOUT_RETENTION, field="RLVR_ROLLOUT_RETENTION")
    except InvalidInput as err:
        raise ImproperlyConfigured(f"RLVR_ROLLOUT_RETENTION: {err.message}") from None


def run_policy(run: Run) -> dict[str, Any]:
    return parse_retention(run.retention) if run.retention else dict(KEEP_ALL)


def describe_retention(policy: dict[str, Any]) -> str:
    """One line for the run page."""
    keep = policy.get("keep", "all")
    if keep == "all":
        return "every rollout is kept"
    recent = policy.get("recent_steps", DEFAULT_RECENT_STEPS)
    if keep == "every_n_steps":
        n = policy["every_n_steps"]
        what = "the rollouts of every step" if n == 1 else f"the rollouts of every {_ordinal(n)} step"
    else:
        what = f"{policy['sample_per_step']} rollouts of each step"
    return f"{what}, the newest {recent} steps whole, and any rollout annotated or listed by a rescore"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# --- pruning ---------------------------------------------------------------------------------------


@dataclass
class Pruner:
    """Prunes one run step by step (the worker's step writer holds one per run). Remembers the policy it
    pruned with and how far, so each step costs only the steps that just left the recent window; a
    policy changed meanwhile (``PATCH /api/runs/<id>/retention/``) is applied to the whole run again."""

    run_id: int
    pruned_through: int = 0
    policy: dict[str, Any] = field(default_factory=lambda: dict(KEEP_ALL))

    def after_step(self, step: int) -> int:
        """Prune what ``step`` pushed out of the recent window; returns the rollouts deleted."""
        stored = Run.objects.filter(pk=self.run_id).values_list("retention", flat=True).first()
        policy = parse_retention(stored) if stored else dict(KEEP_ALL)
        if policy != self.policy:
            self.policy, self.pruned_through = policy, 0
        if policy["keep"] == "all":
            return 0
        through = step - policy["recent_steps"]
        if through <= self.pruned_through:
            return 0
        deleted = prune_steps(run_id=self.run_id, policy=policy, after=self.pruned_through, through=through)
        if deleted is not None:  # None: a rescore is reading the run; try again after the next step
            self.pruned_through = through
        return deleted or 0


def prune_run(*, run_id: int) -> int:
    """Apply the run's policy to every step older than its newest ``recent_steps``; returns the rollouts
    deleted (0 while a rescore of the run is in progress)."""
    run = Run.objects.get(pk=run_id)
    policy = run_policy(run)
    if policy["keep"] == "all":
        return 0
    newest = Rollout.objects.filter(run_id=run_id).aggregate(newest=Max("step"))["newest"]
    if newest is None:
        return 0
    return prune_steps(run_id=run_id, policy=policy, after=0, through=newest - policy["recent_steps"]) or 0


def prune_steps(*, run_id: int, policy: dict[str, Any], after: int, through: int) -> int | None:
    """Prune steps ``after < step <= through`` chunk by chunk, one transaction each; None (nothing done)
    while a rescore of the run is queued or running."""
    if policy["keep"] == "all" or through <= after:
        return 0
    if _rescore_in_progress(run_id):
        return None
    deleted = 0
    for low in range(after, through, PRUNE_CHUNK_STEPS):
        deleted += _prune_chunk(run_id, policy, low, min(low + PRUNE_CHUNK_STEPS, through))
    return deleted


@dataclass(frozen=True)
class _Row:
    id: int
    step: int
    group: int
    sample_index: int
    token_key: str
    token_offset: int
    token_size: int


def _prune_chunk(run_id: int, policy: dict[str, Any], low: int, high: int) -> int:
    with transaction.atomic():
        lock_run(run_id)
        rows = [
            _Row(*values)
            for values in Rollout.objects.filter(run_id=run_id, step__gt=low, step__lte=high).values_list(
                "id", "step", "group", "sample_index", "token_key", "token_offset", "token_size"
            )
        ]
        if not rows:
            return 0
        kept = _kept_by_policy(run_id, policy, rows) | _referenced(run_id, low, high)
        doomed = [row for row in rows if row.id not in kept]
        if not doomed:
            return 0
        Rollout.objects.filter(pk__in=[row.id for row in doomed]).only("pk").delete()
        _release_objects(run_id, rows, {row.id for row in doomed})
    return len(doomed)


def _kept_by_policy(run_id: int, policy: dict[str, Any], rows: list[_Row]) -> set[int]:
    if policy["keep"] == "every_n_steps":
        return {row.id for row in rows if row.step % policy["every_n_steps"] == 0}
    by_step: dict[int, list[_Row]] = defaultdict(list)
    for row in rows:
        by_step[row.step].append(row)
    k = policy["sample_per_step"]
    return {
        row.id
        for step_rows in by_step.values()
        for row in sorted(step_rows, key=lambda r: _rank(run_id, r))[:k]
    }


def _rank(run_id: int, row: _Row) -> bytes:
    return hashlib.blake2b(
        f"{run_id}:{row.step}:{row.group}:{row.sample_index}".encode(), digest_size=8
    ).digest()


def _referenced(run_id: int, low: int, high: int) -> set[int]:
    """Rollouts of these steps that an annotation item points at or a rescore of the run listed."""
    annotated = AnnotationItem.objects.filter(
        rollout__run_id=run_id, rollout__step__gt=low, rollout__step__lte=high
    ).values_list("rollout_id", flat=True)
    return {i for i in annotated if i is not None} | _rescored(run_id)


# (finished rescore job id, its finished_at) -> the rollout ids its result lists. The time is part of the key
# so that an id used again (a test database rolled back) never reads another job's list.
_rescore_refs: dict[tuple[int, Any], frozenset[int]] = {}


def _rescored(run_id: int) -> set[int]:
    """The rollouts the run's finished rescores list; a finished job's result never changes, so each is
    read once per process (a result lists up to 1,000 rows with their text)."""
    jobs = list(
        VerificationJob.objects.filter(
            run_id=run_id, kind=JobKind.RESCORE, status__in=JOB_FINISHED
        ).values_list("id", "finished_at")
    )
    unread = [job_id for job_id, finished_at in jobs if (job_id, finished_at) not in _rescore_refs]
    for job_id, finished_at, result in VerificationJob.objects.filter(pk__in=unread).values_list(
        "id", "finished_at", "result"
    ):
        rows = result.get("rows", []) if isinstance(result, dict) else []
        ids = frozenset(
            r["rollout"] for r in rows if isinstance(r, dict) and isinstance(r.get("rollout"), int)
        )
        _rescore_refs[(job_id, finished_at)] = ids
    return set().union(*(_rescore_refs.get(job, frozenset()) for job in jobs))


def _rescore_in_progress(run_id: int) -> bool:
    return (
        VerificationJob.objects.filter(run_id=run_id, kind=JobKind.RESCORE)
        .exclude(status__in=JOB_FINISHED)
        .exists()
    )


def _release_objects(run_id: int, rows: list[_Row], doomed: set[int]) -> None:
    """After deleting ``doomed`` of ``rows``: objects nobody uses go after commit; one whose kept rollouts
    use less than COMPACT_BELOW of its bytes is rewritten with only those (inside the transaction)."""
    by_key: dict[str, list[_Row]] = defaultdict(list)
    for row in rows:
        if row.token_key:
            by_key[row.token_key].append(row)
    touched = {row.token_key for row in rows if row.id in doomed and row.token_key}
    unused, written = [], []
    try:
        for key in sorted(touched):
            remaining = [row for row in by_key[key] if row.id not in doomed]
            total = max(row.token_offset + row.token_size for row in by_key[key])
            if not remaining:
                unused.append(key)
            elif sum(row.token_size for row in remaining) < COMPACT_BELOW * total:
                written.append(_rewrite(run_id, key, remaining))
                unused.append(key)
    except BaseException:
        token_store().delete(written)  # the transaction rolls back: rows keep naming the old objects
        raise
    delete_objects_after_commit(unused)


def _rewrite(run_id: int, key: str, remaining: Iterable[_Row]) -> str:
    """Copy the kept rollouts' (still compressed) records into a new object and point their rows at it."""
    ordered = sorted(remaining, key=lambda row: row.token_offset)
    start = ordered[0].token_offset
    span = token_store().read_range(key, start, ordered[-1].token_offset + ordered[-1].token_size - start)
    new_key = step_object_key(run_id, ordered[0].step)
    parts, updated, offset = [], [], 0
    for row in ordered:
        parts.append(span[row.token_offset - start : row.token_offset - start + row.token_size])
        updated.append(Rollout(pk=row.id, token_key=new_key, token_offset=offset))
        offset += row.token_size
    token_store().put(new_key, b"".join(parts))
    Rollout.objects.bulk_update(updated, ["token_key", "token_offset"], batch_size=500)
    return new_key
