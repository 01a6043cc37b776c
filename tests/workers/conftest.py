"""Fixtures for tests that run a real Celery worker against the test database and Redis."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import connection
from pytest_django import Settings

from tests.workers.helpers import CeleryWorker, clear_queues, redis_reachable, redis_url, worker_env


@pytest.fixture(autouse=True)
def model_roots(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The test models are built under pytest's temporary folder, so it is a model root here, as
    RLVR_MODEL_ROOTS makes a server's model folder one (worker processes get it through worker_env)."""
    settings.RLVR_MODEL_ROOTS = [*settings.RLVR_MODEL_ROOTS, tmp_path_factory.getbasetemp()]
    return list(settings.RLVR_MODEL_ROOTS)


@pytest.fixture(autouse=True)
def token_store_dir(settings: Settings, tmp_path: Path) -> Path:
    """Rollout token objects go under the test's tmp dir (worker processes get it through worker_env): ids
    restart with each test database, so a shared folder would mix other sessions' runs with these."""
    settings.RLVR_TOKEN_STORE = str(tmp_path / "rollout-tokens")
    return tmp_path / "rollout-tokens"


@pytest.fixture
def runs_dir(settings: Settings, tmp_path: Path) -> Path:
    """Run outputs go under the test's tmp dir, never into the repository's .rlvr-data."""
    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    return tmp_path / "runs"


@pytest.fixture
def real_services(transactional_db: None, runs_dir: Path) -> None:
    """A worker process must see the test's rows: PostgreSQL (SQLite's test database lives in memory)
    with committed data (transactional tests), and a reachable Redis."""
    # In CI (.ci/run sets RLVR_REQUIRE_SERVICES) a missing service fails instead of skipping silently.
    missing = pytest.fail if os.environ.get("RLVR_REQUIRE_SERVICES") else pytest.skip
    if connection.vendor != "postgresql":
        missing(
            "real-worker tests need DATABASE_URL=postgres://... (the worker must share the test database)"
        )
    if not redis_reachable(redis_url()):
        missing(f"real-worker tests need Redis at REDIS_URL ({redis_url()})")


@pytest.fixture
def start_worker(
    real_services: None, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., CeleryWorker]]:
    """``start(nodename, redis_url=None)``: a ``celery worker -Q training`` process (against the test Redis
    unless another is given); all are stopped afterwards. Its model roots include pytest's temporary
    folder, where the test models are built, also where ``model_roots`` does not apply (browser tests)."""
    from django.conf import settings

    workers: list[CeleryWorker] = []
    roots = [*settings.RLVR_MODEL_ROOTS, tmp_path_factory.getbasetemp()]
    env = worker_env(tmp_path / "data", list(dict.fromkeys(roots)))
    clear_queues(redis_url())

    def start(nodename: str, redis_url: str | None = None) -> CeleryWorker:
        own_env = env if redis_url is None else {**env, "REDIS_URL": redis_url}
        worker = CeleryWorker(own_env, tmp_path / f"worker-{len(workers)}.log", nodename).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()
    clear_queues(redis_url())
