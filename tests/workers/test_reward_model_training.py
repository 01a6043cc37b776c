"""A real ``celery worker -Q training`` process trains a reward model end to end: the API answers 202, the worker
builds pairs from a run's stored rollouts (a correct completion chosen over an incorrect one of the same prompt),
trains a Bradley-Terry model with live progress, and creates the new version; that version (``rm:<id>``, resolved as a
launch resolves it) is then the reward of a short GRPO run that trains."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
import torch
from rest_framework.test import APIClient
from transformers import AutoModelForCausalLM

from tests.trainer.loop_helpers import Steps, tiny_config
from tests.webapp.helpers import rollout_record
from tests.workers.helpers import (
    CeleryWorker,
    clear_queues,
    make_project,
    make_user,
    redis_url,
    wait_for,
    worker_env,
)
from webapp.experiments.config_paths import confine_experiment_config
from webapp.experiments.services import experiment_create, run_launch, run_record_step
from webapp.rewards.models import JobStatus, RewardJob, RewardModelVersion
from webapp.rewards.services import reward_model_create
from workers.celery_app import app
from workers.tasks_rewards import train_reward_model

pytestmark = pytest.mark.timeout(300)


def test_the_reward_training_task_goes_to_the_training_queue_and_is_acknowledged_late() -> None:
    assert train_reward_model.acks_late and train_reward_model.reject_on_worker_lost
    assert app.amqp.router.route({}, train_reward_model.name)["queue"].name == "training"


def _record_sum_rollouts(run: Any) -> None:
    """Two steps of 40 prompts x 4 samples: a right sum is correct, a wrong one (ending in '?') is not."""
    rng = random.Random(0)
    for step in (1, 2):
        records = []
        for g in range(40):
            a, b = rng.randint(0, 60), rng.randint(0, 60)
            for i in range(4):
                right = i % 2 == 0
                text = f"{a + b}" if right else f"{a + b + rng.randint(1, 9)}?"
                records.append(rollout_record(
                    step, g, i, prompt=f"{a}+{b}=", prompt_id=f"s{step}-p{g}", completion=text, correct=right,
                ))  # fmt: skip
        run_record_step(run_id=run.pk, step=step, max_steps=2, metrics={}, rollouts=records)


@pytest.mark.slow
def test_a_worker_trains_a_reward_model_whose_version_then_rewards_a_run_that_trains(
    real_services: None, random_model_dir: Path, tmp_path: Path, settings: Any
) -> None:
    owner = make_user("alice")
    project = make_project(owner)
    experiment = experiment_create(
        project=project, actor=owner, name="exp", config={"model": {"name_or_path": "tiny:addition"}}
    )
    settings.RLVR_ENQUEUE = False
    run = run_launch(experiment=experiment, actor=owner)  # stays queued: its rollouts are recorded below
    settings.RLVR_ENQUEUE = True
    _record_sum_rollouts(run)
    reward_model = reward_model_create(project=project, actor=owner, name="sum RM")

    clear_queues(redis_url())
    env = {**worker_env(tmp_path / "data"), "RLVR_HOME": str(tmp_path / "home")}
    worker = CeleryWorker(env, tmp_path / "worker.log", "rmtrain@%h", queues="training").start()
    try:
        client = APIClient()
        client.force_authenticate(user=owner)
        body = {
            "source": {"run": run.pk, "per_prompt": 4},
            "base_model": str(random_model_dir),
            "hyper": {"learning_rate": 3e-3, "epochs": 2, "batch_size": 16, "max_length": 32, "held_out_frac": 0.2,
                      "eval_every": 5},
        }  # fmt: skip
        resp = client.post(
            f"/api/projects/{project.pk}/reward-models/{reward_model.pk}/train/", body, format="json"
        )
        assert resp.status_code == 202, resp.json()
        job_id = resp.json()["id"]
        wait_for(
            lambda: RewardJob.objects.get(pk=job_id).status in ("succeeded", "failed"),
            240,
            "training",
            worker,
        )
        job = client.get(f"/api/reward-jobs/{job_id}/").json()
    finally:
        worker.stop()
        clear_queues(redis_url())
    assert job["status"] == JobStatus.SUCCEEDED, job["error"] + worker.log()
    assert job["attempts"] == 1 and job["progress"]["step"] == job["progress"]["total"] > 0
    assert len(job["progress"]["loss"]) >= 1 and job["progress"]["accuracy"][-1][1] >= 0.85
    version = RewardModelVersion.objects.get(pk=job["output_version"])
    assert job["version_url"].endswith(f"/{version.pk}/")
    assert version.metrics["held_out_pairwise_accuracy"] == job["result"]["held_out_accuracy"] >= 0.85
    assert (
        140 <= version.metrics["pairs"] <= 160
    )  # 2 right x 2 wrong per prompt, less the repeated wrong sums
    assert Path(version.folder) == tmp_path / "home" / "reward-models" / f"job-{job_id}"

    # The new version as a reward: the launch path turns rm:<id> into its folder; a 2-step GRPO run trains on it.
    config = tiny_config(random_model_dir, tmp_path / "policy", verifiers=[version.config_entry])  # type: ignore[arg-type]
    resolved = confine_experiment_config(config.model_dump(mode="json"), project=project, resolve=True)
    assert resolved["verifiers"][0]["params"]["model"] == version.folder
    from trainer.config import config_from_dict
    from trainer.step.loop import train

    steps = Steps()
    result = train(config_from_dict(resolved), sink=steps, log=lambda m: None)
    assert result.status == "succeeded" and len(steps.reports) == 2
    rewards = [r.metrics["rollout/reward_mean"] for r in steps.reports]
    assert all(math.isfinite(x) for x in rewards) and any(
        r.metrics["actor/grad_norm"] > 0 for r in steps.reports
    )
    from trainer.models.checkpoint import latest_checkpoint

    checkpoint = latest_checkpoint(tmp_path / "policy")
    assert checkpoint is not None
    before = AutoModelForCausalLM.from_pretrained(random_model_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(checkpoint).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_progress_is_stored_at_most_once_a_second_and_on_every_measured_accuracy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainer.rewards.bradley_terry import RMProgress
    from workers.tasks_rewards import ProgressWriter

    clock = [100.0]
    monkeypatch.setattr("workers.tasks_rewards.time.monotonic", lambda: clock[0])
    stored: list[dict[str, Any]] = []

    def store(*, job_id: int, progress: dict[str, Any]) -> bool:
        stored.append({"step": progress["step"], "points": len(progress["loss"])})
        return progress["step"] >= 4  # the job was asked to stop

    writer = ProgressWriter(7, store)
    for step in range(1, 5):
        clock[0] += 0.3
        writer.on_step(RMProgress(step, 10, 0.5, 0.75 if step == 2 else None, elapsed_s=step * 0.3))
    assert [s["step"] for s in stored] == [1, 2]  # the first (1 s since the start) and the measured one
    assert writer.progress["loss"][-1] == [4, 0.5] and writer.progress["accuracy"] == [[2, 0.75]]
    assert not writer.cancelled
    clock[0] += 1.0
    writer.on_step(RMProgress(5, 10, 0.4, None, elapsed_s=2.0))
    assert stored[-1] == {"step": 5, "points": 5} and writer.cancelled
