"""A run over two hosts through Celery (one run across several hosts): two real worker processes on this
machine stand for two hosts (distinct node names, loopback addresses, gloo). The run becomes two node tasks;
the first to start hosts the rendezvous and publishes it through the database, the other joins it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import live_processes
from tests.workers.helpers import (
    CeleryWorker,
    clear_queues,
    launch_run,
    make_project,
    make_user,
    redis_url,
    tiny_experiment_config,
    wait_for,
    worker_env,
)
from webapp.experiments.models import MetricPoint, Rollout, Run, RunEvent, RunNode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
_MEASURED = re.compile(r"time|latency|_s$|per_s|throughput|memory|mem_|_gb")


@pytest.fixture
def start_host(
    real_services: None, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], CeleryWorker]]:
    """``start(name)``: a training worker standing for one host, advertising 127.0.0.1."""
    from django.conf import settings

    roots = list(dict.fromkeys([*settings.RLVR_MODEL_ROOTS, tmp_path_factory.getbasetemp()]))
    env = {**worker_env(tmp_path / "data", roots), "RLVR_NODE_ADDRESS": "127.0.0.1", "OMP_NUM_THREADS": "1"}
    workers: list[CeleryWorker] = []
    clear_queues(redis_url())

    def start(name: str) -> CeleryWorker:
        worker = CeleryWorker(env, tmp_path / f"{name}.log", f"{name}@%h").start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()
    clear_queues(redis_url())


def _config(model_dir: Path, nodes: int, processes: int, max_steps: int, **training: Any) -> dict[str, Any]:
    config = tiny_experiment_config(model_dir, max_steps=max_steps)
    config["training"].update(
        {"num_nodes": nodes, "num_processes": processes, "node_join_timeout_s": 60, **training}
    )
    return config


def _finished(run: Run) -> Callable[[], bool]:
    return lambda: Run.objects.get(pk=run.pk).status in ("succeeded", "failed", "cancelled")


def _nodes_done(run: Run, round_: int = 1) -> Callable[[], bool]:
    """Each node task stores its state and log lines after the run's outcome is recorded."""
    nodes = RunNode.objects.filter(run_id=run.pk, round=round_)
    return lambda: nodes.count() == 2 and not nodes.filter(state__in=("joining", "training")).exists()


def _metrics(run: Run) -> dict[tuple[int, str], float | None]:
    points = MetricPoint.objects.filter(run=run).values_list("step", "key", "value")
    return {(step, key): value for step, key, value in points if not _MEASURED.search(key)}


def test_two_worker_hosts_train_one_run_like_one_host_with_two_processes(
    start_host: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    owner = make_user("alice")
    project = make_project(owner)
    a, b = start_host("host-a"), start_host("host-b")
    one_host = launch_run(owner, project, _config(random_model_dir, 1, 2, 3), name="one-host")
    wait_for(_finished(one_host), 240, "the one-host run", a)
    two_hosts = launch_run(owner, project, _config(random_model_dir, 2, 1, 3), name="two-hosts")
    wait_for(_finished(two_hosts), 240, "the two-host run", b)
    wait_for(_nodes_done(two_hosts), 30, "both nodes' records", b)

    one_host.refresh_from_db()
    two_hosts.refresh_from_db()
    assert (one_host.status, one_host.step) == ("succeeded", 3), one_host.error_message
    assert (two_hosts.status, two_hosts.step, two_hosts.error_message) == ("succeeded", 3, "")
    nodes = list(RunNode.objects.filter(run=two_hosts))
    assert sorted(n.name for n in nodes) == sorted([a.node, b.node])  # one node task on each host
    assert [n.is_host for n in nodes].count(True) == 1 and {n.state for n in nodes} == {"finished"}
    assert all("torchrun.log" in n.log_tail for n in nodes)  # every node's logs reach the run page
    one, two = _metrics(one_host), _metrics(two_hosts)
    assert set(one) == set(two) and {step for step, _ in two} == {1, 2, 3}
    for key, value in one.items():
        assert two[key] == pytest.approx(value, rel=1e-6, abs=1e-6), key
    assert Rollout.objects.filter(run=two_hosts).count() == Rollout.objects.filter(run=one_host).count() == 24


def test_a_killed_host_s_run_resumes_by_itself_on_two_hosts_from_its_checkpoint(
    start_host: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    """As on one host, with no resume by hand: the surviving node sees its peer's lease expire without an
    outcome, re-queues the run from its last checkpoint, and a new round of two node tasks finishes it."""
    owner = make_user("alice")
    steps = 40
    config = _config(random_model_dir, 2, 1, steps, collective_timeout_s=30)
    config["checkpoint"]["save_steps"] = 1
    a, b = start_host("host-a"), start_host("host-b")
    run = launch_run(owner, make_project(owner), config)
    wait_for(lambda: Run.objects.get(pk=run.pk).step >= 3, 240, "step 3", a)
    assert Run.objects.get(pk=run.pk).status == "running", "the run ended before the kill: make it longer"

    b.kill()
    c = start_host("host-c")  # a replacement host; the killed worker's own task is of a stale round
    wait_for(lambda: Run.objects.get(pk=run.pk).node_round >= 2, 120, "the automatic re-queue", a)
    wait_for(_finished(run), 240, "the resumed run", c)
    wait_for(_nodes_done(run, 2), 30, "both nodes' records", c)
    run.refresh_from_db()
    assert (run.status, run.step, run.error_message) == ("succeeded", steps, "")
    assert run.attempts == 2 and run.node_round == 2
    lost = RunEvent.objects.get(run=run, kind="recovered")
    assert b.node in lost.message and "Re-queued to resume from its checkpoint at step" in lost.message
    stored = list(
        MetricPoint.objects.filter(run=run, key="rollout/reward_mean").values_list("step", flat=True)
    )
    assert sorted(stored) == list(range(1, steps + 1))  # contiguous, each step stored once
    assert Rollout.objects.filter(run=run).count() == steps * 2 * 4
    first = RunNode.objects.filter(run=run, round=1)
    assert {n.name: n.state for n in first}[b.node] == "training"  # it never reported: it was killed
    assert first.get(name=a.node).state == "failed"
    resumed = RunNode.objects.filter(run=run, round=2)
    assert resumed.count() == 2 and {n.state for n in resumed} == {"finished"}
    assert b.node not in {n.name for n in resumed}
    assert live_processes(run.output_dir, "trainer.distributed.rank_main") == []


def test_a_node_that_never_joins_fails_the_run_after_the_join_timeout(
    start_host: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    owner = make_user("alice")
    alone = start_host("host-a")
    run = launch_run(owner, make_project(owner), _config(random_model_dir, 2, 1, 3, node_join_timeout_s=10))
    wait_for(_finished(run), 120, "the run to fail", alone)

    run.refresh_from_db()
    assert run.status == "failed"
    assert "did not all join the rendezvous" in run.error_message, run.error_message
    assert f"joined: {alone.node} (127.0.0.1, host)" in run.error_message
    assert "did not join: 1 of 2 node(s)" in run.error_message
    assert live_processes(run.output_dir, "torch.distributed.run") == []
