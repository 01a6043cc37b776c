"""A real Celery worker runs an asynchronous run with the vLLM engine: the training task starts the run's own
rollout server (vLLM's CPU build, .venv-vllm), trains with it, and on cancel stops at a step boundary with a
checkpoint and stops the server too."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.processes import live_processes
from tests.workers.helpers import (
    CeleryWorker,
    launch_run,
    make_project,
    make_user,
    tiny_experiment_config,
    wait_for,
)
from webapp.experiments.models import Checkpoint, MetricPoint, Run
from webapp.experiments.services import run_cancel

pytestmark = pytest.mark.slow


def rollout_servers(marker: str) -> list[int]:
    """Live rollout-server processes whose command line mentions ``marker``."""
    return live_processes("rollout-server", marker)


@pytest.mark.timeout(300)
def test_a_worker_trains_an_async_vllm_run_and_cancel_stops_its_rollout_server(
    start_worker: Callable[[str], CeleryWorker], random_model_dir: Path
) -> None:
    owner = make_user("alice")
    config = tiny_experiment_config(random_model_dir, max_steps=500)
    config["rollout"].update(
        {"engine": "vllm", "vllm_mode": "server", "vllm_kv_cache_gb": 0.25, "vllm_max_model_len": 128}
    )
    config["training"]["max_off_policy_steps"] = 1
    run = launch_run(owner, make_project(owner), config)
    worker = start_worker("vllm@%h")
    wait_for(lambda: Run.objects.get(pk=run.pk).step >= 3, 200, "step 3", worker)
    marker = f"run-{run.pk}"
    assert len(rollout_servers(marker)) == 1, "the training task started one rollout server"

    run_cancel(run=Run.objects.get(pk=run.pk), actor=owner)
    wait_for(lambda: Run.objects.get(pk=run.pk).status != "running", 60, "the run to stop", worker)
    run.refresh_from_db()
    assert run.status == "cancelled" and 3 <= run.step < 500, run.error_message
    assert Checkpoint.objects.filter(run=run, step=run.step).exists()
    staleness = dict(MetricPoint.objects.filter(run=run, key="async/staleness").values_list("step", "value"))
    assert staleness[1] == 0 and staleness[3] == 1
    deadline = time.monotonic() + 30
    while rollout_servers(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert rollout_servers(marker) == [], "the rollout server outlived the cancelled run"
