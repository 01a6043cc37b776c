"""The periodic sweep (workers/sweep.py) against the test database and a real Redis: a running run that no
worker holds is re-queued from its last checkpoint, or failed and resumable once its attempts are used up,
each with an event saying why; a held run is left alone; a queued run whose task the broker lost is sent
again on the second sweep that misses it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from webapp.experiments.models import Run, RunEvent
from webapp.experiments.run_lease import lease_key
from webapp.experiments.services import run_mark_started, run_record_checkpoint, run_resume
from workers.sweep import Sweeper, recover_stranded_runs, sweep_lock_key

REDIS_DB = 14  # its own database: the shared one holds other sessions' queues and leases
FAST = {"heartbeat_s": 0.2, "ttl_s": 1.0}  # an absent lease is judged in about a second


@pytest.fixture
def redis_client(settings: Settings) -> Iterator[Any]:
    import redis

    url = redis.connection.parse_url(str(settings.REDIS_URL))
    host, port = url.get("host", "127.0.0.1"), url.get("port", 6379)
    client = redis.Redis(host=host, port=port, db=REDIS_DB, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError:
        (pytest.fail if os.environ.get("RLVR_REQUIRE_SERVICES") else pytest.skip)(
            f"needs Redis at {settings.REDIS_URL}"
        )
    settings.REDIS_URL = f"redis://{host}:{port}/{REDIS_DB}"
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Runs the sweep sends to the training queue (not the shared broker: another session would get them)."""
    sent: list[int] = []
    monkeypatch.setattr("webapp.experiments.dispatch.enqueue_training", sent.append)
    return sent


@pytest.fixture
def stranded(db: None, settings: Settings) -> Run:
    """Running on a worker that is gone, with a checkpoint at step 3 and steps stored up to 4."""
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    run: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    run_mark_started(run_id=run.pk, worker="gpu@gone")
    run_record_checkpoint(run_id=run.pk, step=3, path="/runs/run-1/checkpoints/step-000003")
    Run.objects.filter(pk=run.pk).update(step=4)
    return run


def test_a_running_run_no_worker_holds_is_requeued_from_its_last_checkpoint(
    stranded: Run, redis_client: Any, sent: list[int]
) -> None:
    assert recover_stranded_runs(redis_client, max_attempts=3, **FAST) == {stranded.pk: "requeued"}

    run = Run.objects.get(pk=stranded.pk)
    assert (run.status, run.step, run.resume_from) == ("queued", 3, "/runs/run-1/checkpoints/step-000003")
    assert sent == [run.pk]
    event = RunEvent.objects.get(run=run, kind="recovered")
    assert (
        "No worker held the run" in event.message and "checkpoint at step 3 (attempt 2 of 3)" in event.message
    )


def test_a_stranded_run_that_used_its_attempts_is_failed_and_can_be_resumed(
    stranded: Run, redis_client: Any, sent: list[int]
) -> None:
    assert recover_stranded_runs(redis_client, max_attempts=1, **FAST) == {stranded.pk: "failed"}

    run = Run.objects.get(pk=stranded.pk)
    assert run.status == "failed" and sent == []
    assert "resume it to continue from its checkpoint at step 3" in run.error_message
    assert RunEvent.objects.filter(run=run, kind="failed", message=run.error_message).exists()
    resumed = run_resume(run=run, actor=run.created_by)
    assert (resumed.status, resumed.resume_from) == ("queued", "/runs/run-1/checkpoints/step-000003")


def test_a_stranded_run_that_was_asked_to_stop_is_cancelled(
    stranded: Run, redis_client: Any, sent: list[int]
) -> None:
    Run.objects.filter(pk=stranded.pk).update(cancel_requested=True)
    assert recover_stranded_runs(redis_client, max_attempts=3, **FAST) == {stranded.pk: "cancelled"}
    assert Run.objects.get(pk=stranded.pk).status == "cancelled" and sent == []


def test_a_running_run_whose_lease_is_held_is_left_alone(
    stranded: Run, redis_client: Any, sent: list[int]
) -> None:
    redis_client.set(lease_key(stranded.pk), "gpu@alive/1", ex=20)
    assert recover_stranded_runs(redis_client, max_attempts=3, **FAST) == {}
    assert Run.objects.get(pk=stranded.pk).status == "running"


def kombu_message(task_id: str, run_id: int) -> str:
    """A message as kombu's Redis transport keeps it in a queue's list (the fields the sweep reads)."""
    headers = {"task": "workers.tasks.run_training", "id": task_id, "argsrepr": f"({run_id},)"}
    return json.dumps({"body": "", "headers": headers, "properties": {"correlation_id": task_id}})


def test_a_queued_run_whose_task_is_lost_is_sent_again_on_the_second_sweep_that_misses_it(
    db: None, settings: Settings, redis_client: Any, sent: list[int]
) -> None:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    project = make_project(owner)
    waiting, lost = (launch_run(owner, project, {"training": {"max_steps": 10}}, name=n) for n in ("a", "b"))
    redis_client.rpush("training", kombu_message("task-a", waiting.pk))
    sweeper = Sweeper(interval_s=1, max_attempts=3, name="test")

    assert sweeper.sweep_once() and sent == []  # missing once: its task may be on its way
    redis_client.delete(sweep_lock_key())  # the next interval
    assert sweeper.sweep_once() and sent == [lost.pk]
    assert RunEvent.objects.filter(
        run=lost, kind="requeued", message__contains="no longer in the queue"
    ).exists()


def test_one_worker_sweeps_per_interval(db: None, redis_client: Any, sent: list[int]) -> None:
    assert Sweeper(interval_s=30, max_attempts=3, name="a").sweep_once()
    assert not Sweeper(interval_s=30, max_attempts=3, name="b").sweep_once()
