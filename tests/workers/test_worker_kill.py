"""A worker SIGKILLed mid-run: the run is re-queued when a worker with the same name comes back, and it
resumes from its last checkpoint with every step stored exactly once. Also for an asynchronous run
(training.max_off_policy_steps 2): the rollouts its generator had buffered at the checkpoint are trained on
once, in order, and the resumed steps compute what the killed attempt computed; its staleness is stored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import (
    CeleryWorker,
    launch_run,
    make_project,
    make_user,
    tiny_experiment_config,
    wait_for,
)
from webapp.experiments.models import MetricPoint, Rollout, Run, RunEvent

MAX_STEPS = 12


def stored_metrics(run_id: int) -> dict[int, dict[str, float | None]]:
    steps: dict[int, dict[str, float | None]] = {}
    for step, key, value in MetricPoint.objects.filter(run_id=run_id).values_list("step", "key", "value"):
        steps.setdefault(step, {})[key] = value
    return steps


# Wall-clock measurements of an asynchronous run: they differ between attempts by nature.
ASYNC_TIMING = {
    "async/trainer_idle_s",
    "async/generator_idle_s",
    "async/generator_busy_s",
    "async/buffered_steps",
}


def deterministic(metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in metrics.items()
        if not k.startswith("perf/") and k not in ASYNC_TIMING and not k.endswith("_latency_s")
    }


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("max_off_policy_steps", [0, 2], ids=["sync", "async"])
def test_a_killed_worker_s_run_resumes_from_its_checkpoint_without_losing_or_repeating_steps(
    start_worker: Callable[[str], CeleryWorker], random_model_dir: Path, max_off_policy_steps: int
) -> None:
    owner = make_user("alice")
    config = tiny_experiment_config(random_model_dir, MAX_STEPS, save_steps=3)
    config["training"]["max_off_policy_steps"] = max_off_policy_steps
    run = launch_run(owner, make_project(owner), config)

    first = start_worker("kill-test@%h")
    wait_for(lambda: Run.objects.get(pk=run.pk).step >= 5, 90, "step 5", first)
    first.kill()
    before_kill = stored_metrics(run.pk)
    killed = Run.objects.get(pk=run.pk)
    assert killed.status == "running"  # nobody told the database: the worker just vanished

    second = start_worker("kill-test@%h")
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status in ("succeeded", "failed"), 90, "the resumed run", second
    )

    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    assert run.attempts == 2
    after = stored_metrics(run.pk)
    assert sorted(after) == list(range(1, MAX_STEPS + 1))
    assert len({len(keys) for keys in after.values()}) == 1  # every step has the same metric keys, once each
    per_step = [Rollout.objects.filter(run_id=run.pk, step=s).count() for s in range(1, MAX_STEPS + 1)]
    assert per_step == [2 * 4] * MAX_STEPS
    # Steps redone after the checkpoint computed exactly what the killed attempt had computed.
    for step, metrics in before_kill.items():
        assert deterministic(after[step]) == pytest.approx(deterministic(metrics), rel=1e-5, abs=1e-6), step

    if max_off_policy_steps:  # each step's rollouts came from the policy min(2, step - 1) updates before
        assert [after[s]["async/staleness"] for s in range(1, MAX_STEPS + 1)] == [
            min(2, s - 1) for s in range(1, MAX_STEPS + 1)
        ]
        versions = Rollout.objects.filter(run_id=run.pk).values_list("step", "details")
        assert all(d["allocation"]["policy_version"] == max(0, s - 3) for s, d in versions)

    resume = RunEvent.objects.filter(run_id=run.pk, kind="resume").get()
    assert resume.step in (3, 6, 9)
    assert resume.message.startswith(
        f"Attempt 2 on {second.node}: resuming from the checkpoint at step {resume.step} ("
    )
    assert not RunEvent.objects.filter(run_id=run.pk, message__contains="from the start").exists()
    assert RunEvent.objects.filter(run_id=run.pk, kind="worker_lost").exists()
