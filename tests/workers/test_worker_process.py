"""A real Celery worker process trains runs launched through the services: it streams each step to a
websocket client, and it stops a run at the next step boundary when the run is cancelled."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from pytest_django import Settings

from tests.workers.helpers import (
    CeleryWorker,
    launch_run,
    make_project,
    make_user,
    redis_url,
    tiny_experiment_config,
    wait_for,
)
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import Checkpoint, MetricPoint, Rollout, Run, RunEvent
from webapp.experiments.services import run_cancel


@pytest.fixture
def redis_channel_layer(settings: Settings) -> Iterator[None]:
    """The test process listens on the same Redis channel layer the worker publishes to."""
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url()]}}
    }
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


async def collect_events(communicator: WebsocketCommunicator, timeout_s: float) -> list[dict[str, Any]]:
    """Every message until the run reaches a final status."""
    events: list[dict[str, Any]] = []
    while True:
        event = json.loads(await communicator.receive_from(timeout=timeout_s))
        events.append(event)
        if event["type"] == "run.status" and event["status"] in ("succeeded", "failed", "cancelled"):
            return events


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_worker_trains_a_run_and_a_websocket_client_sees_every_step(
    start_worker: Callable[[str], CeleryWorker], random_model_dir: Path, redis_channel_layer: None
) -> None:
    from webapp.asgi import application

    owner = make_user("alice")
    config = tiny_experiment_config(random_model_dir, max_steps=4)
    # math scores in the verifiers' own process pool (trainer/verifiers/timeout_pool.py), which a prefork
    # child (daemonic) may only start inside workers/processes.py's allowance
    config["verifiers"].append({"name": "math"})
    run = launch_run(owner, make_project(owner), config)
    token = issue_token(owner).token

    async def watch() -> list[dict[str, Any]]:
        communicator = WebsocketCommunicator(
            application, f"/ws/runs/{run.pk}/?token={token}", headers=[(b"origin", b"http://localhost")]
        )
        connected, _ = await communicator.connect()
        assert connected
        hello = await communicator.receive_json_from(timeout=10)
        start_worker("e2e@%h")  # only now, so that no event can precede the subscription
        events = await collect_events(
            communicator, timeout_s=120
        )  # a worker boots slowly on a busy 2-core machine
        await communicator.disconnect()
        return [hello, *events]

    events = async_to_sync(watch)()

    assert events[0] == {**events[0], "type": "run.hello", "run_id": run.pk, "status": "queued", "step": 0}
    steps = [e for e in events if e["type"] == "run.step"]
    assert [e["step"] for e in steps] == [1, 2, 3, 4]
    assert all(e["run_id"] == run.pk and "rollout/reward_mean" in e["metrics"] for e in steps)
    assert len(steps[0]["rollouts"]) == 2 * 4
    statuses = [e["status"] for e in events if e["type"] == "run.status"]
    # the status as of connecting comes first (after run.hello), then the worker's changes
    assert statuses[:2] == ["queued", "running"] and statuses[-1] == "succeeded"
    assert any(e["type"] == "run.checkpoint" and e["step"] == 4 for e in events)
    run.refresh_from_db()
    assert (run.status, run.step, run.attempts) == ("succeeded", 4, 1)
    assert sorted(set(MetricPoint.objects.filter(run=run).values_list("step", flat=True))) == [1, 2, 3, 4]
    math_details = [r.details["math"] for r in Rollout.objects.filter(run=run)]
    assert len(math_details) == 4 * 2 * 4 and not [d for d in math_details if "error" in d], math_details[:3]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_cancelling_a_running_run_stops_it_at_a_step_boundary_with_a_checkpoint(
    start_worker: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    owner = make_user("alice")
    run = launch_run(owner, make_project(owner), tiny_experiment_config(random_model_dir, max_steps=200))
    worker = start_worker("cancel@%h")
    wait_for(lambda: Run.objects.get(pk=run.pk).step >= 2, 60, "step 2", worker)

    run_cancel(run=Run.objects.get(pk=run.pk), actor=owner)
    wait_for(lambda: Run.objects.get(pk=run.pk).status != "running", 30, "the run to stop", worker)

    run.refresh_from_db()
    assert run.status == "cancelled"
    assert 2 <= run.step < 200
    assert Checkpoint.objects.filter(run=run, step=run.step).exists()  # resumable from where it stopped
    assert list(
        RunEvent.objects.filter(run=run, kind__in=["cancel_requested", "cancelled"]).values_list(
            "kind", flat=True
        )
    ) == ["cancel_requested", "cancelled"]
