"""The training queue's task trains a process reward model end to end (called directly, on the test database): the
step labels come from an uploaded Math-Shepherd file or from a policy's samples of chain problems labelled by the
chain oracle or Monte-Carlo continuations; progress and the held-out figures are stored, the folder is written whole,
the new PRM version carries the figures and is what a config's process_reward scorer resolves to; a cancel stops
it with nothing saved."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.helpers import SMALL_CONFIG, make_user
from webapp.datafiles.models import Dataset
from webapp.experiments.config_paths import confine_experiment_config
from webapp.experiments.config_validation import validate_experiment_config
from webapp.rewards.models import JobStatus, RewardJob, RewardModel, RewardModelVersion
from webapp.rewards.services import reward_model_create
from webapp.rewards.training_prm import prm_training_start
from webapp.teams.models import Project
from webapp.teams.services import project_create
from workers.tasks_rewards import train_reward_model

pytestmark = pytest.mark.timeout(300)

HYPER = {"epochs": 1, "batch_size": 4, "micro_batch_size": 4, "max_length": 64, "held_out_frac": 0.25,
         "eval_every": 1, "device": "cpu", "learning_rate": 1e-3}  # fmt: skip


@pytest.fixture
def owner(db: None) -> User:
    return make_user("alice")


@pytest.fixture
def project(owner: User) -> Project:
    return project_create(name="Lab", owner=owner)


@pytest.fixture
def prm_model(project: Project, owner: User) -> RewardModel:
    return reward_model_create(project=project, actor=owner, name="chain PRM")


@pytest.fixture
def home(settings: SettingsWrapper, tmp_path: Path, random_model_dir: Path) -> Path:
    settings.RLVR_HOME = tmp_path / "home"
    settings.RLVR_MODEL_ROOTS = [random_model_dir.parent]
    settings.RLVR_ENQUEUE = False  # the task is called here, not sent
    return settings.RLVR_HOME  # type: ignore[no-any-return]


def _math_shepherd_file(path: Path, n: int = 16) -> Path:
    """``n`` chain problems with their working as steps; a wrong result marks its step and the next '-'."""
    rng = random.Random(0)
    rows = []
    for i in range(n):
        a, b, c = rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 9)
        right = i % 2 == 0
        first = a + b if right else a + b + 1
        steps = [f"{a}+{b}={first}", f"{first}*{c}={first * c}", f"#### {first * c}"]
        marks = ["+", "+", "+"] if right else ["-", "-", "-"]
        rows.append({
            "input": f"({a}+{b})*{c}=\n" + "".join(f"{s} ки\n" for s in steps),
            "label": f"({a}+{b})*{c}=\n" + "".join(f"{s} {m}\n" for s, m in zip(steps, marks, strict=True)),
        })  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _file_job(project: Project, owner: User, prm_model: RewardModel, base: Path, tmp_path: Path) -> RewardJob:
    path = _math_shepherd_file(tmp_path / "steps.jsonl")
    dataset = Dataset.objects.create(project=project, name="steps", path=str(path), format="jsonl", rows=16)
    labels = {"source": "file", "dataset": dataset.pk, "format": "math_shepherd"}
    return prm_training_start(
        reward_model=prm_model, actor=owner, labels=labels, base_model=str(base), hyper=HYPER
    )


def test_a_prm_trained_from_an_uploaded_file_becomes_a_version_with_its_held_out_figures(
    project: Project, owner: User, prm_model: RewardModel, random_model_dir: Path, home: Path, tmp_path: Path
) -> None:
    job = _file_job(project, owner, prm_model, random_model_dir, tmp_path)
    assert train_reward_model(job.pk) == "succeeded"
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    progress, result = job.progress, job.result
    assert progress["phase"] == "succeeded" and progress["step"] == progress["total"] == 3  # 12 examples / 4
    assert [p[0] for p in progress["loss"]] == [1, 2, 3] and len(progress["accuracy"]) == 3
    assert progress["accuracy"][-1][1] == result["held_out_step_accuracy"]
    version = job.output_version
    assert version is not None
    assert (version.kind, version.origin, version.training_job_id) == ("prm", "trained", job.pk)
    assert version.metrics["held_out_step_accuracy"] == result["held_out_step_accuracy"] is not None
    assert version.metrics["held_out_first_error_f1"] == result["held_out_first_error_f1"]
    assert version.metrics["majority_step_accuracy"] == result["majority_step_accuracy"] is not None
    assert version.metrics["held_out_steps"] == 12  # 4 held-out problems x 3 steps
    folder = home / "reward-models" / f"job-{job.pk}"
    assert Path(version.folder) == folder and not folder.with_name(folder.name + ".partial").exists()
    provenance = json.loads((folder / "rlvr_prm.json").read_text())
    assert (
        provenance["source"]["kind"] == "file"
        and provenance["source"]["dataset"] == job.config["labels"]["dataset"]
    )
    assert str(tmp_path / "steps.jsonl") not in json.dumps(
        job.result
    )  # the file is named, not its server path
    config = validate_experiment_config({**SMALL_CONFIG, **version.config_entry})
    resolved = confine_experiment_config(config, project=project, resolve=True)
    assert resolved["process_reward"]["scorer"]["params"]["model"] == str(folder)


def test_a_prm_trained_from_oracle_labels_of_a_policys_samples(
    project: Project, owner: User, prm_model: RewardModel, random_model_dir: Path, home: Path
) -> None:
    labels = {"source": "oracle", "policy": str(random_model_dir), "problems": 6, "samples_per_problem": 2,
              "max_new_tokens": 24, "seed": 1}  # fmt: skip
    job = prm_training_start(
        reward_model=prm_model, actor=owner, labels=labels, base_model=str(random_model_dir), hyper=HYPER
    )
    outcome = train_reward_model(job.pk)
    job.refresh_from_db()
    assert outcome == "succeeded", job.error
    assert job.progress["labelled_problems"] == job.progress["problems"] == 6
    assert job.result["source"]["kind"] == "oracle" and job.result["source"]["tokens_generated"] > 0
    assert job.result["source"]["policy"] == str(random_model_dir)
    assert job.result["train_examples"] + job.result["held_out_examples"] == job.progress["examples"] > 0
    assert job.output_version is not None and job.output_version.kind == "prm"


def test_a_cancel_stops_the_job_while_it_labels_and_nothing_is_saved(
    project: Project, owner: User, prm_model: RewardModel, random_model_dir: Path, home: Path
) -> None:
    labels = {"source": "monte_carlo", "policy": str(random_model_dir), "problems": 4, "k": 1,
              "max_new_tokens": 8}  # fmt: skip
    job = prm_training_start(
        reward_model=prm_model, actor=owner, labels=labels, base_model=str(random_model_dir), hyper=HYPER
    )
    RewardJob.objects.filter(pk=job.pk).update(cancel_requested=True)  # asked while the worker starts it
    assert train_reward_model(job.pk) == "cancelled"
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.progress["phase"] == "cancelled"
    assert job.output_version_id is None and not RewardModelVersion.objects.exists()
    assert not (home / "reward-models" / f"job-{job.pk}").exists()


def test_a_cancel_while_it_trains_stops_it_before_the_next_step_with_nothing_saved(
    project: Project, owner: User, prm_model: RewardModel, random_model_dir: Path, home: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from webapp.rewards import training_services

    store = training_services.training_progress

    def cancel_after_the_first_step(*, job_id: int, progress: dict[str, Any]) -> bool:
        if progress["step"] >= 1:  # someone presses Cancel once the first step is shown
            RewardJob.objects.filter(pk=job_id).update(cancel_requested=True)
        return store(job_id=job_id, progress=progress)

    monkeypatch.setattr(training_services, "training_progress", cancel_after_the_first_step)
    job = _file_job(project, owner, prm_model, random_model_dir, tmp_path)
    assert train_reward_model(job.pk) == "cancelled"
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.progress["step"] == 1 < job.progress["total"]
    assert not RewardModelVersion.objects.exists() and not (home / "reward-models" / f"job-{job.pk}").exists()


def test_a_data_file_deleted_since_the_start_fails_the_job_saying_so(
    project: Project, owner: User, prm_model: RewardModel, random_model_dir: Path, home: Path, tmp_path: Path
) -> None:
    job = _file_job(project, owner, prm_model, random_model_dir, tmp_path)
    Dataset.objects.all().delete()
    assert train_reward_model(job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "not an uploaded data file of this project" in job.error


@pytest.mark.slow
def test_a_real_training_worker_runs_a_prm_job_sent_through_the_api(
    real_services: None, random_model_dir: Path, tmp_path: Path, settings: SettingsWrapper
) -> None:
    from rest_framework.test import APIClient

    from tests.workers.helpers import CeleryWorker, clear_queues, redis_url, wait_for, worker_env

    owner = make_user("alice")
    project = project_create(name="Lab", owner=owner)
    prm_model = reward_model_create(project=project, actor=owner, name="chain PRM")
    path = _math_shepherd_file(tmp_path / "steps.jsonl")
    dataset = Dataset.objects.create(project=project, name="steps", path=str(path), format="jsonl", rows=16)
    settings.RLVR_MODEL_ROOTS = [random_model_dir.parent]
    clear_queues(redis_url())
    env = {**worker_env(tmp_path / "data", [random_model_dir.parent]), "RLVR_HOME": str(tmp_path / "home")}
    worker = CeleryWorker(env, tmp_path / "worker.log", "prmtrain@%h", queues="training").start()
    try:
        client = APIClient()
        client.force_authenticate(user=owner)
        body = {"labels": {"source": "file", "dataset": dataset.pk, "format": "math_shepherd"},
                "base_model": str(random_model_dir), "hyper": HYPER}  # fmt: skip
        resp = client.post(
            f"/api/projects/{project.pk}/reward-models/{prm_model.pk}/train/", body, format="json"
        )
        assert resp.status_code == 202, resp.json()
        job_id = resp.json()["id"]
        wait_for(
            lambda: RewardJob.objects.get(pk=job_id).status in ("succeeded", "failed"), 240, "PRM", worker
        )
        job = client.get(f"/api/reward-jobs/{job_id}/").json()
    finally:
        worker.stop()
        clear_queues(redis_url())
    assert job["status"] == "succeeded", job["error"] + worker.log()
    assert job["attempts"] == 1 and job["progress"]["step"] == job["progress"]["total"] == 3
    version = RewardModelVersion.objects.get(pk=job["output_version"])
    assert version.folder == str(tmp_path / "home" / "reward-models" / f"job-{job_id}")
    assert version.metrics["held_out_step_accuracy"] == job["result"]["held_out_step_accuracy"] is not None


def test_progress_is_stored_at_most_once_a_second_and_on_every_measured_accuracy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainer.process.prm_training import PRMProgress
    from workers.tasks_prm import PRMProgressWriter

    clock = [100.0]
    monkeypatch.setattr("workers.tasks_prm.time.monotonic", lambda: clock[0])
    stored: list[int] = []

    def store(*, job_id: int, progress: dict[str, Any]) -> bool:
        stored.append(progress["step"])
        return progress["step"] >= 5  # the job was asked to stop

    writer = PRMProgressWriter(7, store)
    for step in range(1, 5):
        clock[0] += 0.3
        measured = 0.75 if step == 2 else None
        writer.on_step(PRMProgress(step, 10, 0.5, measured, measured, elapsed_s=step * 0.3))
    assert stored == [1, 2]  # the first (1 s since the start) and the measured one
    assert writer.progress["accuracy"] == [[2, 0.75]] and writer.progress["first_error_accuracy"] == [
        [2, 0.75]
    ]
    assert len(writer.progress["loss"]) == 4 and not writer.cancelled
    clock[0] += 1.0
    writer.on_step(PRMProgress(5, 10, 0.4, None, None, elapsed_s=2.0))
    assert stored[-1] == 5 and writer.cancelled
