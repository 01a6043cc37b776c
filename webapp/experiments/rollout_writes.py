"""The one way rollouts are written: the native trainer (``services.run_record_step``, from the worker's
step writer) and the ingest API (webapp/ingest) both call ``store_rollouts``.

Order matters: the step's token object (webapp/experiments/token_blobs.py) is put into the token store
first, then the rows that point at it are written in one transaction, and objects no row points at any
more are deleted after that transaction commits. A crash in between leaves at worst an object no row
names (removed with its run), never a row whose arrays are missing.

Each write gets an object of its own (a random key), so rows are replaced slot by slot with an upsert on
(run, step, group, sample_index): a replaced slot keeps its row id (an annotation item that points at it
stays valid), and a batch the ingest client resends after a lost answer lands on the same slots again:
the same rows, never a duplicate. Writes to one run are serialised by a ``FOR NO KEY UPDATE`` lock on
its row, which is what makes "no row points at this object any more" safe to decide inside the
transaction; it does not block other inserts that reference the run (events, checkpoints).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import IntegrityError, connection, transaction

from trainer.sinks import RolloutRecord
from webapp.experiments.models import Rollout, Run
from webapp.experiments.storable import clean_json, clean_text, finite_or_none
from webapp.experiments.token_blobs import encode_step
from webapp.experiments.token_store import run_prefix, step_object_key, token_store

logger = logging.getLogger(__name__)

SLOT_FIELDS = ("run", "step", "group", "sample_index")
# Everything an upsert of a slot replaces (the inline token columns are emptied: the arrays moved out).
REPLACED_FIELDS = (
    "prompt_id", "prompt", "completion", "answer", "finish_reason", "reward", "rewards", "correct", "details",
    "advantage", "length", "tokens", "token_data", "token_key", "token_offset", "token_size",
)  # fmt: skip
INSERT_BATCH = 256  # one INSERT for a usual step; well under PostgreSQL's 65,535 parameters


def store_rollouts(*, run_id: int, step: int, records: Sequence[RolloutRecord], replace_step: bool) -> int:
    """Store ``records`` as the rollouts of ``step``; returns how many were stored.

    ``replace_step=True``: afterwards the step has exactly these rollouts (a re-recorded step).
    ``replace_step=False``: each record replaces its slot and the step's other rollouts stay (the ingest
    API, which sends a step in several batches and may resend one). Two records for one slot are refused
    with IntegrityError before anything is written.
    """
    _refuse_repeated_slots(step, records)
    rows = [_rollout_row(run_id, step, record) for record in records]
    store = token_store()
    key = step_object_key(run_id, step) if rows else ""
    if rows:
        data, spans = encode_step(records)
        for row, (offset, size) in zip(rows, spans, strict=True):
            row.token_key, row.token_offset, row.token_size = key, offset, size
        store.put(key, data)
    try:
        # No savepoint of its own inside a caller's transaction (run_record_step): a failure here fails it whole.
        with transaction.atomic(savepoint=False):
            lock_run(run_id)
            before = list(
                Rollout.objects.filter(run_id=run_id, step=step).values_list(
                    "group", "sample_index", "token_key"
                )
            )
            if rows:
                Rollout.objects.bulk_create(
                    rows,
                    batch_size=INSERT_BATCH,
                    update_conflicts=True,
                    unique_fields=SLOT_FIELDS,
                    update_fields=REPLACED_FIELDS,
                )
            new_slots = {(row.group, row.sample_index) for row in rows}
            kept = [(g, s, k) for g, s, k in before if (g, s) not in new_slots]
            if replace_step and kept:
                replaced = Rollout.objects.filter(run_id=run_id, step=step)
                (replaced.exclude(token_key=key) if rows else replaced).only("pk").delete()
                kept = []
            still_used = {k for _, _, k in kept} | {key}
            delete_objects_after_commit({k for _, _, k in before} - still_used)
    except BaseException:
        if key:
            _delete_quietly([key])  # its rows were never committed
        raise
    return len(rows)


def rollouts_delete_after(*, run_id: int, step: int) -> None:
    """Delete the rollouts of steps after ``step`` and, after commit, their token objects."""
    with transaction.atomic():
        lock_run(run_id)
        doomed = Rollout.objects.filter(run_id=run_id, step__gt=step)
        keys = set(doomed.values_list("token_key", flat=True).distinct())
        doomed.only("pk").delete()
        delete_objects_after_commit(keys)


def lock_run(run_id: int) -> None:
    """Serialise rollout writes to one run (see the module docstring); the caller holds a transaction.
    SQLite has no row locks and needs none: its IMMEDIATE transactions (webapp/env.py) admit one writer."""
    if not connection.features.has_select_for_update:
        return
    if not Run.objects.select_for_update(no_key=True).filter(pk=run_id).values_list("pk", flat=True):
        raise Run.DoesNotExist(
            f"run {run_id} does not exist (deleted meanwhile?): its rollouts were not stored"
        )


def delete_objects_after_commit(keys: Iterable[str]) -> None:
    """Delete these token objects once the surrounding transaction commits (nothing if it rolls back).
    The caller has made sure no committed row will name them."""
    doomed = sorted(k for k in keys if k)
    if doomed:  # robust: a failing hook is logged, never raised out of the committed block
        transaction.on_commit(lambda: _delete_quietly(doomed), robust=True)


def delete_run_objects(sender: Any, instance: Run, **kwargs: Any) -> None:
    """``post_delete`` of a Run (connected in apps.py): its whole prefix goes after commit, with any object
    a crashed write left behind. Deleting an experiment or a project reaches here for each run."""
    prefix = run_prefix(instance.pk)

    def delete() -> None:
        try:
            token_store().delete_prefix(prefix)
        except Exception as err:  # an orphaned object costs space, not correctness
            logger.warning("could not delete the token objects of deleted run %s: %s", instance.pk, err)

    transaction.on_commit(delete, robust=True)


def _delete_quietly(keys: list[str]) -> None:
    try:
        token_store().delete(keys)
    except Exception as err:
        logger.warning("could not delete %d token object(s) (%s ...): %s", len(keys), keys[0], err)


def _refuse_repeated_slots(step: int, records: Sequence[RolloutRecord]) -> None:
    seen: set[tuple[int, int]] = set()
    for record in records:
        slot = (record.group, record.sample_index)
        if slot in seen:
            raise IntegrityError(
                f"two rollouts of step {step} have the same slot (group {slot[0]}, sample_index {slot[1]}); "
                "each (group, sample_index) may appear once per step"
            )
        seen.add(slot)


def _rollout_row(run_id: int, step: int, record: RolloutRecord) -> Rollout:
    """The row without its token arrays (they go to the token store); text cleaned for PostgreSQL."""
    return Rollout(
        run_id=run_id,
        step=step,
        prompt_id=clean_text(record.prompt_id),
        group=record.group,
        sample_index=record.sample_index,
        prompt=clean_text(record.prompt),
        completion=clean_text(record.completion),
        answer=None if record.answer is None else clean_text(record.answer),
        finish_reason=record.finish_reason,
        reward=finite_or_none(record.reward),
        rewards=clean_json(record.rewards),
        correct=None if record.correct is None else bool(record.correct),  # None: an outside run did not say
        details=clean_json(record.details),
        advantage=finite_or_none(record.advantage),
        length=len(record.token_ids),
        tokens=[],
        token_data=b"",
    )
