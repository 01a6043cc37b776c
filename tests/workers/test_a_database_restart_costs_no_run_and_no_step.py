"""A real worker trains a run on a private PostgreSQL server (tests/workers/private_postgres.py) that is
restarted under it: the worker rides through (its writes retry, the steps wait in order) and the run
succeeds with every step stored exactly once. Kept down past the retry window instead, the run stops, the
worker cannot even record that, and the periodic sweep finds the stranded run once the server is back:
failed and resumable, with an event saying why; resumed, it finishes with every step stored once."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import DatabaseError, connection
from pytest_django import DjangoDbBlocker, Settings

from tests.workers.helpers import (
    CeleryWorker,
    clear_queues,
    launch_run,
    make_project,
    make_user,
    redis_reachable,
    tiny_experiment_config,
    wait_for,
    worker_env,
)
from tests.workers.private_postgres import PrivatePostgres, initdb_binary, use_as_default_database
from webapp.experiments.models import MetricPoint, Rollout, Run, RunEvent

pytestmark = [pytest.mark.slow]
MAX_STEPS = 16
BROKER_DB = 12  # this module's own Redis database: its queues are cleared, other sessions' are not touched
REQUIRED = bool(os.environ.get("CI") or os.environ.get("RLVR_REQUIRE_SERVICES"))


@pytest.fixture(scope="module")
def server(django_db_blocker: DjangoDbBlocker) -> Iterator[PrivatePostgres]:
    """The private server, with a migrated template database each test copies."""
    initdb = initdb_binary()
    if initdb is None:
        (pytest.fail if REQUIRED else pytest.skip)("PostgreSQL's server (initdb) is not installed")
    assert initdb is not None
    server = PrivatePostgres(initdb.parent).init()
    try:
        server.start()
        server.create_database("rlvr_template")
        from django.core.management import call_command

        with django_db_blocker.unblock(), use_as_default_database(server.url("rlvr_template")):
            call_command("migrate", verbosity=0, interactive=False)
        yield server
    finally:
        server.destroy()


@pytest.fixture
def broker_url(settings: Settings) -> Iterator[str]:
    import redis

    base = redis.connection.parse_url(str(settings.REDIS_URL))
    url = f"redis://{base.get('host', '127.0.0.1')}:{base.get('port', 6379)}/{BROKER_DB}"
    if not redis_reachable(url):
        (pytest.fail if REQUIRED else pytest.skip)(f"a real worker needs Redis ({url})")
    clear_queues(url)
    yield url
    clear_queues(url)


@pytest.fixture
def on_private_database(
    server: PrivatePostgres,
    django_db_blocker: DjangoDbBlocker,
    request: pytest.FixtureRequest,
    settings: Settings,
    runs_dir: Path,
) -> Iterator[PrivatePostgres]:
    """This test's own copy of the template database, as this process's default database."""
    name = f"rlvr_{request.node.name[-40:].lower().replace('-', '_')}"
    server.create_database(name, template="rlvr_template")
    settings.RLVR_ENQUEUE = False  # the test sends the task to its own broker database (send_training)
    with django_db_blocker.unblock(), use_as_default_database(server.url(name)):
        yield server


def send_training(broker_url: str, run_id: int) -> None:
    from webapp.core.tasks_by_name import RUN_TRAINING, app

    with app.connection_for_write(broker_url) as broker:
        app.send_task(
            RUN_TRAINING.name, args=(run_id,), queue=RUN_TRAINING.queue, ignore_result=True, connection=broker
        )


@pytest.fixture
def start_worker(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, broker_url: str, settings: Settings
) -> Iterator[Callable[..., CeleryWorker]]:
    workers: list[CeleryWorker] = []

    def start(nodename: str, **env: str) -> CeleryWorker:
        roots = list(dict.fromkeys([*settings.RLVR_MODEL_ROOTS, tmp_path_factory.getbasetemp()]))
        full_env = {**worker_env(tmp_path / "data", roots), "REDIS_URL": broker_url, **env}
        worker = CeleryWorker(full_env, tmp_path / f"worker-{len(workers)}.log", nodename).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


def read(query: Callable[[], Any]) -> Any:
    """A read from this process while the server may be restarting: None when it cannot answer."""
    try:
        return query()
    except DatabaseError:
        connection.close()
        return None


def status_of(run_id: int) -> tuple[str, int] | None:
    return read(lambda: tuple(Run.objects.filter(pk=run_id).values_list("status", "step").get()))


def assert_every_step_stored_once(run_id: int, max_steps: int) -> None:
    pairs = list(MetricPoint.objects.filter(run_id=run_id).values_list("step", "key"))
    assert len(pairs) == len(set(pairs))  # no step's metric twice
    steps = sorted({step for step, _ in pairs})
    assert steps == list(range(1, max_steps + 1))
    per_step = [Rollout.objects.filter(run_id=run_id, step=s).count() for s in steps]
    assert per_step == [2 * 4] * max_steps
    keys_per_step = {step: sum(1 for s, _ in pairs if s == step) for step in steps}
    assert len(set(keys_per_step.values())) == 1, keys_per_step


@pytest.mark.timeout(240)
def test_a_database_restart_during_a_run_costs_no_run_and_no_step(
    on_private_database: PrivatePostgres,
    start_worker: Callable[..., CeleryWorker],
    broker_url: str,
    random_model_dir: Path,
) -> None:
    owner = make_user("alice")
    run = launch_run(
        owner, make_project(owner), tiny_experiment_config(random_model_dir, MAX_STEPS, save_steps=4)
    )
    worker = start_worker("pg-restart@%h")
    send_training(broker_url, run.pk)
    wait_for(lambda: (status_of(run.pk) or ("", 0))[1] >= 3, 120, "step 3", worker)

    connection.close()
    on_private_database.stop()  # "terminating connection due to administrator command"
    time.sleep(3)
    on_private_database.start()

    wait_for(lambda: (status_of(run.pk) or ("running", 0))[0] != "running", 120, "the run to end", worker)
    run.refresh_from_db()
    assert run.status == "succeeded", f"{run.error_message}\n{worker.log()}"
    assert run.attempts == 1  # ridden through, not restarted
    assert "the database is back" in worker.log()  # its writes did meet the outage
    assert_every_step_stored_once(run.pk, MAX_STEPS)


@pytest.mark.timeout(300)
def test_a_run_stranded_by_a_longer_outage_is_found_by_the_sweep_and_resumes_to_the_end(
    on_private_database: PrivatePostgres,
    start_worker: Callable[..., CeleryWorker],
    broker_url: str,
    random_model_dir: Path,
) -> None:
    owner = make_user("alice")
    run = launch_run(
        owner, make_project(owner), tiny_experiment_config(random_model_dir, MAX_STEPS, save_steps=2)
    )
    worker = start_worker("pg-outage@%h", RLVR_DB_RETRY_S="3", RLVR_SWEEP_S="2", RLVR_MAX_ATTEMPTS="1")
    send_training(broker_url, run.pk)
    wait_for(lambda: (status_of(run.pk) or ("", 0))[1] >= 5, 120, "step 5", worker)

    connection.close()
    on_private_database.stop()
    # Past the window for the steps (3 s) and then for the failure record (3 s more): the task ends.
    wait_for(lambda: "could not record its failure" in worker.log(), 60, "the worker to give up", worker)
    on_private_database.start()
    back = time.monotonic()

    wait_for(lambda: (status_of(run.pk) or ("running", 0))[0] != "running", 60, "the sweep", worker)
    found_after_s = time.monotonic() - back
    run.refresh_from_db()
    assert run.status == "failed", worker.log()
    assert found_after_s < 30  # two heartbeats of an absent lease plus a sweep interval, with room
    event = RunEvent.objects.filter(run=run, kind="failed").latest("id")
    assert (
        "No worker held the run" in event.message
        and "resume it to continue from its checkpoint" in event.message
    )

    from webapp.experiments.services import run_resume

    resumed = run_resume(run=run, actor=owner)
    assert resumed.resume_from  # from the last checkpoint, not from the start
    send_training(broker_url, run.pk)
    wait_for(
        lambda: (status_of(run.pk) or ("queued", 0))[0] in ("succeeded", "failed"),
        120,
        "the resumed run",
        worker,
    )
    run.refresh_from_db()
    assert run.status == "succeeded", f"{run.error_message}\n{worker.log()}"
    assert_every_step_stored_once(run.pk, MAX_STEPS)
    attempt = RunEvent.objects.filter(run=run, kind="resume").latest("id").message
    assert attempt.startswith(f"Attempt 2 on {worker.node}: resuming from the checkpoint at step ")
