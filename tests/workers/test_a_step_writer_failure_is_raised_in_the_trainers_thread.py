"""A step that fails to store is never lost silently: its exception is raised in the trainer's thread at
the next call, the writer stores nothing after it, and the run ends failed saying why."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from trainer.sinks import StepReport
from webapp.experiments.models import Checkpoint, MetricPoint, Run
from workers.sink import DjangoRunSink
from workers.step_writer import StepWriter, StepWriterStopped


class StoreDown(RuntimeError):
    pass


def test_a_failed_job_is_raised_once_at_the_next_call_and_later_steps_are_dropped() -> None:
    writer = StepWriter("test-writer")
    ran: list[int] = []

    def failing() -> None:
        raise StoreDown("the token store is unreachable")

    writer.submit(failing)
    writer.submit(lambda: ran.append(2))  # may be queued before the failure is seen: dropped, not stored
    with pytest.raises(StoreDown, match="unreachable"):
        writer.flush()
    writer.flush()  # raised once: the caller's error handling (on_error) can wait for the writer
    with pytest.raises(StepWriterStopped):
        writer.submit(lambda: ran.append(3))
    assert ran == [] and writer.close() is None


def test_a_failure_not_raised_yet_is_returned_by_close() -> None:
    writer = StepWriter("test-writer")
    writer.submit(lambda: (_ for _ in ()).throw(StoreDown("disk full")))
    error = writer.close()
    assert isinstance(error, StoreDown) and writer.close() is None


@pytest.fixture
def run(transactional_db: None, settings: Settings) -> Run:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    launched: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    return launched


def report(step: int) -> StepReport:
    return StepReport(step=step, max_steps=10, metrics={"m": float(step)}, rollouts=[], elapsed_s=0)


def test_a_step_that_failed_to_store_raises_at_the_checkpoint_and_no_checkpoint_is_recorded(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.experiments import services

    real = services.run_record_step

    def failing_on_step_2(**kwargs: Any) -> None:
        if kwargs["step"] == 2:
            raise StoreDown("PostgreSQL refused the step")
        real(**kwargs)

    monkeypatch.setattr(services, "run_record_step", failing_on_step_2)
    sink = DjangoRunSink(run.pk)
    sink.on_step(report(1))
    sink.on_step(report(2))
    with pytest.raises(StoreDown):
        sink.on_checkpoint(2, "/runs/x/checkpoints/step-000002")
    assert not Checkpoint.objects.filter(run=run).exists()  # a resume will not skip the lost step

    sink.on_error(
        "StoreDown: PostgreSQL refused the step", "Traceback ..."
    )  # what the training loop does next
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.step) == ("failed", 1)
    assert list(MetricPoint.objects.filter(run=run).values_list("step", flat=True)) == [1]


def test_a_failure_to_store_seen_only_at_the_end_fails_the_run_instead_of_succeeding(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.experiments import services

    def failing(**kwargs: Any) -> None:
        raise StoreDown("PostgreSQL refused the step")

    monkeypatch.setattr(services, "run_record_step", failing)
    sink = DjangoRunSink(run.pk)
    sink.on_step(report(1))
    with pytest.raises(StoreDown):
        sink.on_end("succeeded", {})  # the task then records the run as failed (workers/tasks.py)
    assert not sink.finished and Run.objects.get(pk=run.pk).status == "queued"


def test_an_error_of_the_trainer_mentions_a_storing_failure_it_did_not_see(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.experiments import services

    def failing(**kwargs: Any) -> None:
        raise StoreDown("PostgreSQL refused the step")

    monkeypatch.setattr(services, "run_record_step", failing)
    sink = DjangoRunSink(run.pk)
    sink.on_step(report(1))
    sink.on_error("TrainingDiverged: NaN loss", "Traceback ...")
    failed = Run.objects.get(pk=run.pk)
    assert failed.status == "failed" and "storing a step had failed too: StoreDown" in failed.error_message
