"""Every node of a run over several hosts holds a lease the sweep sees: a running run none of whose leases is
held is recovered, but one whose only live lease is a joining node's (the rendezvous host's run lease gone) is
left to its nodes, which settle it themselves (workers/nodes.py); cancel also counts it as held."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from webapp.experiments.models import Run
from webapp.experiments.run_lease import node_lease_key, node_leases_held, run_lease_held
from webapp.experiments.services import run_mark_started
from workers.lease import Heartbeat
from workers.sweep import recover_stranded_runs

FAST = {"heartbeat_s": 0.2, "ttl_s": 1.0}


@pytest.fixture
def client(real_services: None) -> Iterator[Any]:
    from workers.lease import redis_client

    yield redis_client()


@pytest.fixture
def running(settings: Settings, client: Any) -> Iterator[Run]:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    run: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10, "num_nodes": 2}})
    run_mark_started(run_id=run.pk, worker="gpu-a@gone")
    yield run
    for key in client.scan_iter(match=f"rlvr:run-lease:{run.pk}*"):
        client.delete(key)


def test_a_run_held_only_by_a_node_lease_is_left_to_its_nodes_and_recovered_once_it_is_gone(
    running: Run, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    monkeypatch.setattr("webapp.experiments.dispatch.enqueue_training", sent.append)
    key = node_lease_key(running.pk, 1, 1)
    beat = Heartbeat(running.pk, "gpu-b@alive", client, heartbeat_s=0.2, ttl_s=1, key=key)
    beat.beat()
    with beat:
        assert node_leases_held(running.pk, client) and run_lease_held(run_id=running.pk, client=client)
        assert recover_stranded_runs(client, max_attempts=3, **FAST) == {}
        assert Run.objects.get(pk=running.pk).status == "running"
    assert client.get(key) is None  # released when the node's part ends
    assert not node_leases_held(running.pk, client)
    assert recover_stranded_runs(client, max_attempts=3, **FAST) == {running.pk: "requeued"}
    assert sent == [running.pk]


def test_a_node_task_waiting_in_the_queue_counts_as_its_run_s_task(client: Any) -> None:
    import json

    from workers.sweep import tasks_in_broker

    queue = "test-multi-node-leases"
    headers = {"task": "workers.tasks.run_training", "id": "node-task-1", "argsrepr": "(41, 2, 1)"}
    client.rpush(queue, json.dumps({"body": "", "headers": headers}))
    try:
        found = tasks_in_broker(client, queue=queue)
    finally:
        client.delete(queue)
    assert {"run:41", "node-task-1"} <= found and "run:41, 2, 1" not in found
