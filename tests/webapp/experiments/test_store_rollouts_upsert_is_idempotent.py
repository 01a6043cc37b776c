"""store_rollouts(replace_step=False), as the ingest API uses it: a step arrives in several batches and a
batch may be resent after a lost answer. Each record replaces its slot; nothing is ever duplicated."""

from __future__ import annotations

from typing import Any

from tests.webapp.helpers import rollout_record
from webapp.experiments.models import Rollout, Run
from webapp.experiments.rollout_writes import store_rollouts
from webapp.experiments.selectors import rollout_detail
from webapp.experiments.token_store import run_prefix, token_store


def batch(group: int, reward: float = 1.0) -> list[Any]:
    return [rollout_record(2, group, s, n_tokens=8, reward=reward) for s in range(4)]


def snapshot(run: Run) -> list[tuple[Any, ...]]:
    return list(
        Rollout.objects.filter(run=run)
        .order_by("group", "sample_index")
        .values_list("id", "group", "sample_index", "reward", "completion", "length")
    )


def test_resending_a_batch_gives_the_same_rows_and_no_duplicate(run: Run) -> None:
    store_rollouts(run_id=run.pk, step=2, records=batch(0), replace_step=False)
    store_rollouts(run_id=run.pk, step=2, records=batch(1), replace_step=False)
    before = snapshot(run)

    assert store_rollouts(run_id=run.pk, step=2, records=batch(1), replace_step=False) == 4  # the resend
    assert snapshot(run) == before  # the same ids, the same values, 8 rows
    assert len(before) == 8
    for row_id, *_ in before:
        assert rollout_detail(run=run, rollout_id=row_id).token_ids == list(range(100, 108))


def test_a_resend_leaves_no_unreferenced_object_behind(
    run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    store_rollouts(run_id=run.pk, step=2, records=batch(0), replace_step=False)
    once = token_store().total_bytes(run_prefix(run.pk))
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):  # the test's transaction never commits
            store_rollouts(run_id=run.pk, step=2, records=batch(0), replace_step=False)
    keys = set(Rollout.objects.filter(run=run).values_list("token_key", flat=True))
    assert len(keys) == 1
    assert token_store().total_bytes(run_prefix(run.pk)) == once  # the replaced objects were deleted


def test_a_later_batch_replaces_its_slots_and_keeps_the_step_s_other_rollouts(run: Run) -> None:
    store_rollouts(run_id=run.pk, step=2, records=batch(0) + batch(1), replace_step=False)
    first_object = Rollout.objects.filter(run=run).values_list("token_key", flat=True).first()
    changed = [rollout_record(2, 1, 0, n_tokens=3, reward=0.0, completion="changed")]
    store_rollouts(run_id=run.pk, step=2, records=changed, replace_step=False)

    rows = {
        (g, s): (reward, completion, key)
        for g, s, reward, completion, key in Rollout.objects.filter(run=run).values_list(
            "group", "sample_index", "reward", "completion", "token_key"
        )
    }
    assert len(rows) == 8
    assert rows[(1, 0)][:2] == (0.0, "changed")
    assert rows[(0, 0)][2] == first_object  # untouched slots still read the first object, which stays
    row = Rollout.objects.get(run=run, group=1, sample_index=0)
    assert rollout_detail(run=run, rollout_id=row.pk).token_ids == [100, 101, 102]
    other = Rollout.objects.get(run=run, group=0, sample_index=3)
    assert rollout_detail(run=run, rollout_id=other.pk).token_ids == list(range(100, 108))


def test_two_records_for_one_slot_are_refused_before_anything_is_written(run: Run) -> None:
    import pytest
    from django.db import IntegrityError

    with pytest.raises(IntegrityError, match="same slot"):
        store_rollouts(
            run_id=run.pk,
            step=2,
            records=[rollout_record(2, 0, 0), rollout_record(2, 0, 0)],
            replace_step=False,
        )
    assert not Rollout.objects.filter(run=run).exists()
    assert token_store().total_bytes(run_prefix(run.pk)) == 0
