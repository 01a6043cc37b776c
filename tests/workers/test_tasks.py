"""``run_training`` executed in-process (Celery's eager ``apply``): outcomes recorded through services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import FakeRedis, launch_run, make_project, make_user, tiny_experiment_config
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Checkpoint, MetricPoint, Rollout, Run, RunEvent
from webapp.experiments.services import run_cancel
from workers.celery_app import app
from workers.lease import lease_key
from workers.tasks import run_training

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True)
def in_memory_leases(monkeypatch: pytest.MonkeyPatch) -> FakeRedis:
    redis = FakeRedis()
    monkeypatch.setattr("workers.lease.redis_client", lambda: redis)
    return redis


@pytest.fixture
def owner(transactional_db: None, settings: Settings, tmp_path: Path) -> Any:
    """Committed rows: the sink's step writer stores steps through a database connection of its own."""
    settings.RLVR_ENQUEUE = False  # these tests execute the task themselves
    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    return make_user("alice")


def launch(owner: Any, config: dict[str, Any], project: Any = None) -> Run:
    run: Run = launch_run(owner, project or make_project(owner), config)
    return run


def test_the_training_task_is_late_acknowledged_and_requeued_if_its_worker_dies() -> None:
    assert run_training.acks_late and run_training.reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.amqp.router.route({}, run_training.name)["queue"].name == "training"
    assert {q.name for q in app.conf.task_queues} == {"default", "training", "eval"}


def test_a_run_trains_to_the_end_and_every_step_is_stored(owner: Any, random_model_dir: Path) -> None:
    run = launch(owner, tiny_experiment_config(random_model_dir, max_steps=2))

    assert run_training.apply(args=(run.pk,)).get() == "succeeded"

    run.refresh_from_db()
    assert (run.status, run.step, run.attempts) == ("succeeded", 2, 1)
    assert sorted(set(MetricPoint.objects.filter(run=run).values_list("step", flat=True))) == [1, 2]
    assert Rollout.objects.filter(run=run).count() == 2 * 2 * 4
    assert Checkpoint.objects.filter(run=run, step=2).exists()
    assert run.final_metrics["rollout/reward_mean"] is not None


def test_a_trainer_error_fails_the_run_with_the_message_the_trainer_wrote(
    owner: Any, random_model_dir: Path
) -> None:
    project = make_project(owner)
    broken = Dataset.objects.create(  # a stored file that no longer parses (uploads are checked when stored)
        project=project,
        name="broken",
        path=str(DATA / "malformed_line.jsonl"),
        format="jsonl",
        rows=3,
        prompt_field="prompt",
        answer_field="answer",
    )
    config = tiny_experiment_config(random_model_dir)
    config["data"] = {"source": "file", "path": f"dataset:{broken.pk}"}
    run = launch(owner, config, project)

    assert run_training.apply(args=(run.pk,)).get() == "failed"

    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error_message.startswith(
        f"dataset:{broken.pk}, line 3: not valid JSON"
    )  # named as the user did
    assert str(DATA) not in run.error_message  # the server path of the file never shows
    assert "Traceback" not in run.error_message
    assert RunEvent.objects.filter(run=run, kind="failed").exists()


def test_an_unexpected_error_fails_the_run_and_keeps_the_traceback(
    owner: Any, random_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_train(*args: Any, **kwargs: Any) -> None:
        raise ZeroDivisionError("division by zero in a verifier")

    monkeypatch.setattr("trainer.step.loop.train", broken_train)
    run = launch(owner, tiny_experiment_config(random_model_dir))

    assert run_training.apply(args=(run.pk,)).get() == "failed"

    run.refresh_from_db()
    assert run.error_message == "ZeroDivisionError: division by zero in a verifier"
    assert "broken_train" in run.traceback


def test_a_run_cancelled_while_queued_is_not_trained(owner: Any, random_model_dir: Path) -> None:
    run = launch(owner, tiny_experiment_config(random_model_dir))
    run_cancel(run=run, actor=owner)

    assert run_training.apply(args=(run.pk,)).get() == "skipped"

    run.refresh_from_db()
    assert (run.status, run.attempts) == ("cancelled", 0)


def test_a_delivery_of_a_run_whose_lease_is_held_by_a_live_worker_is_dropped(
    owner: Any, random_model_dir: Path, in_memory_leases: FakeRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = launch(owner, tiny_experiment_config(random_model_dir))
    in_memory_leases.set(lease_key(run.pk), "other@h/1", ex=20)
    monkeypatch.setattr("workers.lease.holder_alive", lambda *args, **kwargs: True)

    assert run_training.apply(args=(run.pk,)).get() == "skipped"
    assert Run.objects.get(pk=run.pk).attempts == 0


def test_a_second_delivery_of_a_finished_run_changes_nothing(owner: Any, random_model_dir: Path) -> None:
    run = launch(owner, tiny_experiment_config(random_model_dir, max_steps=1))
    run_training.apply(args=(run.pk,)).get()
    stored = MetricPoint.objects.filter(run=run).count()

    assert run_training.apply(args=(run.pk,)).get() == "skipped"

    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 1)
    assert MetricPoint.objects.filter(run=run).count() == stored


def test_a_run_trains_on_an_uploaded_dataset_named_by_id(
    owner: Any, random_model_dir: Path, settings: Settings
) -> None:
    from io import BytesIO

    from webapp.datafiles.services import dataset_upload

    settings.RLVR_DATASETS_DIR = settings.RLVR_RUNS_DIR.parent / "datasets"
    project = make_project(owner)
    raw = (DATA / "addition.jsonl").read_bytes()
    dataset = dataset_upload(
        project=project, actor=owner, file=BytesIO(raw), filename="addition.jsonl", size=len(raw)
    )
    config = tiny_experiment_config(random_model_dir, max_steps=1)
    config["data"] = {"source": "file", "path": f"dataset:{dataset.pk}"}
    run = launch(owner, config, project)

    assert run_training.apply(args=(run.pk,)).get() == "succeeded", Run.objects.get(pk=run.pk).error_message

    prompts = set(Rollout.objects.filter(run=run).values_list("prompt", flat=True))
    assert prompts and prompts <= {line.split('"')[3] for line in raw.decode().splitlines()}
    assert Run.objects.get(pk=run.pk).config["data"]["path"] == f"dataset:{dataset.pk}"
