"""store_rollouts(replace_step=True), as the native trainer records a step: afterwards the step holds
exactly the new rollouts; slots that stay keep their row ids; the old object goes after commit."""

from __future__ import annotations

from typing import Any

from tests.webapp.helpers import rollout_record
from webapp.experiments.models import Rollout, Run
from webapp.experiments.rollout_writes import store_rollouts
from webapp.experiments.token_store import run_prefix, token_store


def test_re_recording_a_step_leaves_exactly_the_new_rollouts(
    run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    store_rollouts(
        run_id=run.pk,
        step=1,
        records=[rollout_record(1, g, s) for g in range(2) for s in range(2)],
        replace_step=True,
    )
    kept_id = Rollout.objects.get(run=run, group=0, sample_index=0).pk
    old_key = Rollout.objects.get(run=run, group=0, sample_index=0).token_key
    with django_capture_on_commit_callbacks(execute=True):  # the test's transaction never commits
        store_rollouts(
            run_id=run.pk, step=1, records=[rollout_record(1, 0, 0, n_tokens=9)], replace_step=True
        )

    rows = list(Rollout.objects.filter(run=run))
    assert [(r.pk, r.group, r.sample_index, r.length) for r in rows] == [(kept_id, 0, 0, 9)]
    assert rows[0].token_key != old_key
    assert token_store().total_bytes(run_prefix(run.pk)) == rows[0].token_size  # the old object is gone


def test_recording_a_step_with_no_rollouts_empties_it(
    run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    store_rollouts(run_id=run.pk, step=1, records=[rollout_record(1)], replace_step=True)
    store_rollouts(run_id=run.pk, step=2, records=[rollout_record(2)], replace_step=True)
    with django_capture_on_commit_callbacks(execute=True):
        assert store_rollouts(run_id=run.pk, step=1, records=[], replace_step=True) == 0
    assert list(Rollout.objects.filter(run=run).values_list("step", flat=True)) == [2]
    assert token_store().total_bytes(run_prefix(run.pk)) == Rollout.objects.get(run=run).token_size


def test_a_write_that_fails_in_the_database_removes_its_object(run: Run, monkeypatch: Any) -> None:
    import pytest
    from django.db import DatabaseError

    def broken(*args: object, **kwargs: object) -> None:
        raise DatabaseError("the database went away")

    monkeypatch.setattr(Rollout.objects, "bulk_create", broken)  # type: ignore[attr-defined]
    with pytest.raises(DatabaseError):
        store_rollouts(run_id=run.pk, step=1, records=[rollout_record(1)], replace_step=True)
    assert token_store().total_bytes(run_prefix(run.pk)) == 0
