"""run_record_step: one transaction per step, idempotent, a constant number of queries."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import IntegrityError

from tests.webapp.helpers import rollout_record
from webapp.experiments.models import MetricPoint, Rollout, Run
from webapp.experiments.services import run_record_step, run_truncate_after
from webapp.experiments.token_blobs import rollout_token_arrays
from webapp.realtime.publish import run_group

Capture = Any


def record(run: Run, step: int, reward: float = 0.5, n_rollouts: int = 4, **kwargs: Any) -> None:
    run_record_step(
        run_id=run.pk,
        step=step,
        max_steps=20,
        metrics={"rollout/reward_mean": reward, "actor/pg_loss": -0.1},
        rollouts=[rollout_record(step, i // 2, i % 2, **kwargs) for i in range(n_rollouts)],
    )


def test_a_step_stores_its_metrics_and_rollouts_and_moves_the_run_on(run: Run) -> None:
    record(run, 1)
    run.refresh_from_db()
    assert run.step == 1
    assert dict(MetricPoint.objects.filter(run=run).values_list("key", "value")) == {
        "rollout/reward_mean": 0.5,
        "actor/pg_loss": -0.1,
    }
    assert Rollout.objects.filter(run=run, step=1).count() == 4


def test_recording_the_same_step_again_replaces_it(run: Run) -> None:
    record(run, 1, reward=0.1, n_rollouts=4)
    record(run, 1, reward=0.9, n_rollouts=2)
    assert list(
        MetricPoint.objects.filter(run=run, key="rollout/reward_mean").values_list("value", flat=True)
    ) == [0.9]
    assert Rollout.objects.filter(run=run, step=1).count() == 2


def test_a_step_is_all_or_nothing(run: Run) -> None:
    record(run, 1)
    duplicate_slot = [rollout_record(2, 0, 0), rollout_record(2, 0, 0)]
    with pytest.raises(IntegrityError):
        run_record_step(
            run_id=run.pk, step=2, max_steps=20, metrics={"rollout/reward_mean": 1.0}, rollouts=duplicate_slot
        )
    run.refresh_from_db()
    assert run.step == 1
    assert not MetricPoint.objects.filter(run=run, step=2).exists()


def test_a_big_step_takes_a_constant_number_of_queries(run: Run, django_assert_max_num_queries: Any) -> None:
    rollouts = [rollout_record(1, g, s, n_tokens=64) for g in range(32) for s in range(8)]  # 256 completions
    metrics = {f"metric/{i}": float(i) for i in range(40)}
    with django_assert_max_num_queries(12):
        run_record_step(run_id=run.pk, step=1, max_steps=20, metrics=metrics, rollouts=rollouts)
    assert Rollout.objects.filter(run=run).count() == 256


def test_nan_metrics_are_stored_as_null(run: Run) -> None:
    run_record_step(
        run_id=run.pk,
        step=1,
        max_steps=20,
        metrics={"actor/kl": float("nan"), "x": float("inf")},
        rollouts=[],
    )
    assert set(MetricPoint.objects.filter(run=run).values_list("value", flat=True)) == {None}


def test_text_with_nul_characters_and_nan_details_is_stored(run: Run) -> None:
    odd = rollout_record(
        1, completion="a\x00b", tokens=["a", "\x00", "b", "c"], details={"exact": {"score": float("nan")}}
    )
    run_record_step(run_id=run.pk, step=1, max_steps=20, metrics={}, rollouts=[odd])
    stored = Rollout.objects.get(run=run)
    assert stored.completion == "a\ufffdb"
    assert rollout_token_arrays(stored).tokens[1] == "\ufffd"  # the token strings live in the token store
    assert stored.details == {"exact": {"score": None}}


def test_a_step_publishes_one_compact_event_after_commit(
    run: Run, memory_channel_layer: None, django_capture_on_commit_callbacks: Capture
) -> None:
    layer = get_channel_layer()
    assert layer is not None
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(run_group(run.pk), channel)
    with django_capture_on_commit_callbacks(execute=True):
        record(run, 3, n_rollouts=40)
    message = async_to_sync(layer.receive)(channel)
    assert (message["type"], message["event"], message["run_id"]) == ("run.event", "run.step", run.pk)
    payload = message["payload"]
    assert (payload["step"], payload["max_steps"], payload["metrics"]["rollout/reward_mean"]) == (3, 20, 0.5)
    assert len(payload["rollouts"]) == 32
    assert "token_values" not in payload["rollouts"][0]


def test_truncating_drops_every_step_after_the_given_one(run: Run) -> None:
    for step in range(1, 6):
        record(run, step)
    run_truncate_after(run_id=run.pk, step=3)
    run.refresh_from_db()
    assert run.step == 3
    assert sorted(set(MetricPoint.objects.filter(run=run).values_list("step", flat=True))) == [1, 2, 3]
    assert sorted(set(Rollout.objects.filter(run=run).values_list("step", flat=True))) == [1, 2, 3]
