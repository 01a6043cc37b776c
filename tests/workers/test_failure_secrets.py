"""A secret value provided to the worker (a judge's API key) never reaches the worker log or a stored failure,
even when an exception's own text repeats it: describe_failure, the task's failure record and the sink's
on_error / on_warning scrub it (trainer.verifiers.secrets.scrub)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from tests.workers.helpers import FakeRedis, launch_run, make_project, make_user, tiny_experiment_config
from trainer.errors import VerifierError
from trainer.verifiers.secrets import SCRUBBED, forget_secrets, provide_secrets
from webapp.experiments.models import Run, RunEvent
from webapp.experiments.services import run_mark_started
from workers.failures import describe_failure
from workers.sink import DjangoRunSink
from workers.tasks import run_training

KEY = "sk-test-4f9Q2mZ7xL1pR8vBn3Kd"


@pytest.fixture(autouse=True)
def provided_key() -> Iterator[str]:
    provide_secrets({"openai-judge": KEY})
    yield KEY
    forget_secrets()


def test_an_unexpected_errors_message_traceback_and_log_line_are_scrubbed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    try:
        raise RuntimeError(f"401 Unauthorized: Incorrect API key provided: {KEY}")
    except RuntimeError as err:
        message, trace = describe_failure(err, "run 7")
    assert message == f"RuntimeError: 401 Unauthorized: Incorrect API key provided: {SCRUBBED}"
    assert KEY not in trace and SCRUBBED in trace and "test_an_unexpected_errors" in trace
    assert "run 7 failed" in caplog.text and SCRUBBED in caplog.text  # the traceback is still logged
    assert KEY not in caplog.text
    assert all(r.exc_info is None for r in caplog.records)  # no handler formats the raw exception


def test_a_trainer_errors_message_is_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise VerifierError(f"judge refused the key {KEY}")
    except VerifierError as err:
        message, trace = describe_failure(err, "evaluation 3")
    assert (message, trace) == (f"judge refused the key {SCRUBBED}", "")
    assert KEY not in caplog.text


@pytest.fixture(autouse=True)
def in_memory_leases(monkeypatch: pytest.MonkeyPatch) -> FakeRedis:
    redis = FakeRedis()
    monkeypatch.setattr("workers.lease.redis_client", lambda: redis)
    return redis


def test_a_run_failing_with_the_key_in_its_exception_stores_and_logs_it_scrubbed(
    transactional_db: None,
    settings: Settings,
    tmp_path: Path,
    random_model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings.RLVR_ENQUEUE = False
    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    caplog.set_level(logging.INFO)

    def broken_train(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError(f"POST https://judge.example/v1 with Authorization: Bearer {KEY} failed")

    monkeypatch.setattr("trainer.step.loop.train", broken_train)
    owner = make_user("alice")
    run: Run = launch_run(owner, make_project(owner), tiny_experiment_config(random_model_dir))

    assert run_training.apply(args=(run.pk,)).get() == "failed"

    run.refresh_from_db()
    assert run.error_message == (
        f"ConnectionError: POST https://judge.example/v1 with Authorization: Bearer {SCRUBBED} failed"
    )
    assert "broken_train" in run.traceback and KEY not in run.traceback
    assert f"run {run.pk} failed" in caplog.text and KEY not in caplog.text
    assert not any(KEY in e.message for e in RunEvent.objects.filter(run=run))


def test_the_sinks_error_and_warning_are_stored_scrubbed(
    transactional_db: None, settings: Settings, runs_dir: Path
) -> None:
    settings.RLVR_ENQUEUE = False
    owner = make_user("alice")
    run = run_mark_started(
        run_id=launch_run(owner, make_project(owner), {"training": {"max_steps": 3}}).pk, worker="w1"
    )
    sink = DjangoRunSink(run.pk)
    sink.on_warning(1, "judge", f"judge answered 401 for {KEY}")
    sink.on_error(f"judge failed: key {KEY} refused", f"Traceback ...\nHTTPError: {KEY}")

    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error_message == f"judge failed: key {SCRUBBED} refused"
    assert run.traceback == f"Traceback ...\nHTTPError: {SCRUBBED}"
    assert RunEvent.objects.get(run=run, kind="judge").message == f"judge answered 401 for {SCRUBBED}"
    assert not any(KEY in e.message for e in RunEvent.objects.filter(run=run))
