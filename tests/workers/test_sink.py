"""DjangoRunSink writes through the services (steps on its writer thread); StopPoller asks the database at
most once per interval.

The writer thread has its own database connection, which sees only committed rows: tests that store
steps use ``transactional_db`` and wait for the writer with ``sink.flush()`` (or an outcome)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from pytest_django import DjangoAssertNumQueries, Settings

from tests.workers.helpers import launch_run, make_project, make_user
from trainer.sinks import RolloutRecord, StepReport
from webapp.experiments.models import Checkpoint, MetricPoint, Rollout, Run
from webapp.experiments.token_blobs import rollout_token_arrays
from webapp.stack import free_port
from workers.sink import DjangoRunSink, StopPoller


def record(step: int, group: int, index: int) -> RolloutRecord:
    return RolloutRecord(
        step=step,
        prompt_id=f"p{group}",
        group=group,
        sample_index=index,
        prompt="1+2=",
        completion="3",
        finish_reason="eos",
        reward=1.0,
        rewards={"exact": 1.0},
        correct=True,
        details={"exact": {}},
        advantage=0.5,
        token_ids=[7, 1],
        tokens=["3", "<eos>"],
        token_values={"logprob": [-0.1, -0.2], "advantage": [0.5, 0.5], "loss_mask": [1.0, 1.0]},
    )


def report(step: int) -> StepReport:
    rollouts = [record(step, g, i) for g in range(2) for i in range(2)]
    return StepReport(
        step=step,
        max_steps=10,
        metrics={"rollout/reward_mean": 0.25 * step, "actor/pg_loss": -0.1},
        rollouts=rollouts,
        elapsed_s=0.1,
    )


@pytest.fixture
def run(db: None, settings: Settings) -> Run:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    launched: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    return launched


@pytest.fixture
def committed_run(transactional_db: None, settings: Settings) -> Run:
    """A run the writer thread's own connection can see."""
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    launched: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    return launched


@pytest.fixture
def memory_layer(settings: Settings) -> Iterator[object]:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    yield get_channel_layer()
    channel_layers.backends.clear()


def test_a_step_is_stored_with_its_metrics_and_packed_rollouts(committed_run: Run) -> None:
    run = committed_run
    sink = DjangoRunSink(run.pk)
    sink.on_step(report(3))
    sink.close()

    assert dict(MetricPoint.objects.filter(run=run, step=3).values_list("key", "value")) == {
        "rollout/reward_mean": 0.75,
        "actor/pg_loss": -0.1,
    }
    rollouts = list(Rollout.objects.filter(run=run, step=3))
    assert len(rollouts) == 4
    arrays = rollout_token_arrays(rollouts[0])
    assert arrays.token_ids == [7, 1] and arrays.channels["logprob"] == pytest.approx([-0.1, -0.2])
    assert arrays.tokens == ["3", "<eos>"]
    assert Run.objects.get(pk=run.pk).step == 3


def test_a_step_publishes_one_compact_event_after_commit(committed_run: Run, memory_layer: object) -> None:
    run = committed_run
    layer = get_channel_layer()
    assert layer is not None
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(f"run.{run.pk}", channel)

    sink = DjangoRunSink(run.pk)
    sink.on_step(report(1))
    sink.close()

    message = async_to_sync(layer.receive)(channel)
    assert message["type"] == "run.event" and message["event"] == "run.step" and message["run_id"] == run.pk
    payload = message["payload"]
    assert payload["step"] == 1 and payload["metrics"]["rollout/reward_mean"] == 0.25
    assert len(payload["rollouts"]) == 4 and "token_ids" not in payload["rollouts"][0]


def test_with_redis_down_a_step_is_still_stored_and_the_run_goes_on(
    committed_run: Run,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run = committed_run
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [dead]}}
    }
    channel_layers.backends.clear()
    started = time.monotonic()
    try:
        with caplog.at_level(logging.WARNING):
            sink = DjangoRunSink(run.pk)
            sink.on_step(report(1))
            sink.close()
    finally:
        channel_layers.backends.clear()

    assert time.monotonic() - started < 10
    assert MetricPoint.objects.filter(run=run, step=1).count() == 2
    assert "could not publish run.step" in caplog.text


def test_checkpoint_end_and_error_are_recorded(run: Run) -> None:
    sink = DjangoRunSink(run.pk)
    sink.on_checkpoint(5, "/runs/x/checkpoints/step-000005")
    assert Checkpoint.objects.get(run=run).step == 5
    assert not sink.finished

    sink.on_end("succeeded", {"rollout/reward_mean": 0.5})
    assert sink.finished
    assert Run.objects.get(pk=run.pk).status == "succeeded"

    DjangoRunSink(run.pk).on_error("data file bad at row 3", "Traceback ...")
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.error_message) == ("failed", "data file bad at row 3")


def test_the_stop_poller_asks_the_database_at_most_once_per_interval(
    run: Run, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    now = [100.0]
    poller = StopPoller(run.pk, interval_s=1.0, clock=lambda: now[0])
    with django_assert_num_queries(1):
        assert poller() is False
        now[0] += 0.5
        assert poller() is False  # within the interval: no query

    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    now[0] += 0.6
    with django_assert_num_queries(1):
        assert poller() is True
        now[0] += 5
        assert poller() is True  # once stopping, always stopping, without asking again
