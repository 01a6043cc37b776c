"""StepWriter: at most two steps handed over and not stored; a slow store makes the trainer wait (it
never piles steps up in memory); a checkpoint, the end and a failure are recorded only after every step
before them is stored; the thread closes its own database connection when it stops (seen on PostgreSQL
or a SQLite file: Django keeps an in-memory SQLite database open on purpose)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connections as django_connections
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from trainer.sinks import RolloutRecord, StepReport
from webapp.experiments.models import Checkpoint, Rollout, Run
from workers.sink import DjangoRunSink
from workers.step_writer import StepWriter


def test_a_third_step_waits_until_one_of_two_pending_steps_is_stored() -> None:
    writer = StepWriter("test-writer", max_pending=2)
    release, started, done = threading.Event(), threading.Event(), []

    def slow(n: int) -> Any:
        def job() -> None:
            started.set()
            release.wait(10)
            done.append(n)

        return job

    writer.submit(slow(1))
    writer.submit(slow(2))
    assert started.wait(5) and writer.pending == 2
    third = threading.Thread(target=writer.submit, args=(slow(3),))
    third.start()
    third.join(0.3)
    assert third.is_alive()  # backpressure: the trainer waits instead of holding a third step
    release.set()
    third.join(5)
    assert not third.is_alive()
    writer.flush()
    assert done == [1, 2, 3] and writer.pending == 0  # in order
    writer.close()


def test_flush_returns_only_when_every_step_is_stored() -> None:
    writer = StepWriter("test-writer")
    done: list[int] = []
    for n in range(5):
        writer.submit(lambda n=n: (time.sleep(0.02), done.append(n)))  # type: ignore[misc]
    writer.flush()
    assert done == [0, 1, 2, 3, 4]
    assert writer.close() is None and writer._thread is not None and not writer._thread.is_alive()


def record(step: int, group: int) -> RolloutRecord:
    return RolloutRecord(
        step=step,
        prompt_id=f"p{group}",
        group=group,
        sample_index=0,
        prompt="1+2=",
        completion="3",
        finish_reason="eos",
        reward=1.0,
        rewards={"exact": 1.0},
        correct=True,
        details={},
        advantage=0.5,
        token_ids=[7, 1],
        tokens=["3", "<eos>"],
        token_values={"logprob": [-0.1, -0.2]},
    )


@pytest.fixture
def run(transactional_db: None, settings: Settings) -> Run:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    launched: Run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    return launched


def test_a_checkpoint_is_recorded_only_after_the_steps_before_it_are_stored(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webapp.experiments import services

    real_record_step, real_checkpoint = services.run_record_step, services.run_record_checkpoint
    seen_at_checkpoint: list[int] = []

    def slow_record_step(**kwargs: Any) -> None:
        time.sleep(0.3)  # a slow database: the step is still being written when the checkpoint comes
        real_record_step(**kwargs)

    def watching_checkpoint(**kwargs: Any) -> None:
        seen_at_checkpoint.append(Rollout.objects.filter(run_id=run.pk, step__lte=kwargs["step"]).count())
        real_checkpoint(**kwargs)

    monkeypatch.setattr(services, "run_record_step", slow_record_step)
    monkeypatch.setattr(services, "run_record_checkpoint", watching_checkpoint)
    sink = DjangoRunSink(run.pk)
    started = time.monotonic()
    for step in (1, 2):
        sink.on_step(
            StepReport(
                step=step, max_steps=10, metrics={}, rollouts=[record(step, g) for g in range(3)], elapsed_s=0
            )
        )
    assert time.monotonic() - started < 0.25  # handed over: the trainer did not wait for the database
    sink.on_checkpoint(2, "/runs/x/checkpoints/step-000002")
    assert seen_at_checkpoint == [6]  # both steps' rollouts were stored before the checkpoint row
    sink.on_end("succeeded", {})
    assert Checkpoint.objects.get(run=run).step == 2 and Run.objects.get(pk=run.pk).status == "succeeded"


def test_the_end_is_recorded_after_the_last_step_and_the_writer_stops(run: Run) -> None:
    sink = DjangoRunSink(run.pk)

    for step in range(1, 4):
        sink.on_step(
            StepReport(step=step, max_steps=3, metrics={"m": 1.0}, rollouts=[record(step, 0)], elapsed_s=0)
        )
    sink.on_end("succeeded", {})
    stored = Run.objects.get(pk=run.pk)
    assert (stored.status, stored.step) == ("succeeded", 3)
    assert Rollout.objects.filter(run=run).count() == 3
    assert sink.writer._thread is not None and not sink.writer._thread.is_alive()


def test_the_writer_thread_closes_its_own_database_connection_when_it_stops(run: Run) -> None:
    writer = StepWriter("test-writer")
    connections: list[Any] = []
    writer.submit(lambda: connections.append(django_connections["default"]))  # the thread's own wrapper
    writer.submit(lambda: Run.objects.filter(pk=run.pk).count())  # the thread opened its connection
    writer.close()
    if connections[0].vendor == "sqlite" and connections[0].is_in_memory_db():
        # Django never closes an in-memory SQLite database (that would drop it: DatabaseWrapper.close in
        # django/db/backends/sqlite3/base.py), so SQLite's in-memory test database cannot show the close.
        pytest.skip("the close is only observable on PostgreSQL or a SQLite file")
    assert connections[0].connection is None
