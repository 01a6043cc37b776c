"""Shared pieces of the worker tests: a tiny fast experiment, users/projects/runs, and a real Celery
worker process pointed at the test database and the test Redis."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.contrib.auth import get_user_model
from django.db import connection

REPO = Path(__file__).resolve().parents[2]
QUEUES = ("default", "training", "eval")


def tiny_experiment_config(model_dir: Path, max_steps: int = 4, save_steps: int = 0) -> dict[str, Any]:
    """About 0.5 s per step on a CPU: 2 prompts x 4 completions of 4 tokens, rewarded for a digit."""
    return {
        "name": "worker-test",
        "seed": 0,
        "model": {"name_or_path": str(model_dir)},
        "data": {"source": "demo", "size": 64},
        "rollout": {"num_generations": 4, "max_completion_length": 4},
        "verifiers": [{"name": "regex_format", "params": {"pattern": "[0-9]", "match": "search"}}],
        "training": {
            "max_steps": max_steps,
            "prompts_per_step": 2,
            "micro_batch_size": 8,
            "learning_rate": 1e-3,
        },
        "checkpoint": {"save_steps": save_steps, "save_total_limit": 2},
    }


def make_user(username: str) -> Any:
    return get_user_model().objects.create_user(username=username, password=f"pw-{username}-123")


def make_project(owner: Any, name: str = "lab") -> Any:
    from webapp.teams.services import project_create

    return project_create(name=name, owner=owner)


def launch_run(owner: Any, project: Any, config: dict[str, Any], name: str = "exp") -> Any:
    """Create the experiment and launch a run (enqueued to Celery when the transaction commits)."""
    from webapp.experiments.services import experiment_create, run_launch

    experiment = experiment_create(project=project, actor=owner, name=name, config=config)
    return run_launch(experiment=experiment, actor=owner)


def database_url() -> str:
    """The test database (pytest-django's test_<name>) as a DATABASE_URL a worker process can use."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "") + (f":{quote(s['PASSWORD'])}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def redis_url() -> str:
    from django.conf import settings

    return str(settings.REDIS_URL)


def redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def clear_queues(url: str) -> None:
    """Drop every Celery message (queued or unacknowledged) and run lease in the test Redis database, so
    nothing left by an earlier session (ids restart with each test database) reaches a later test."""
    import redis

    client = redis.Redis.from_url(url)
    for pattern in (*(f"{q}*" for q in QUEUES), "unacked*", "_kombu.binding.*", "rlvr:run-lease:*"):
        keys = list(client.scan_iter(match=pattern))
        if keys:
            client.delete(*keys)


class CeleryWorker:
    """``celery -A workers.celery_app worker`` in its own process group, logging to a file."""

    def __init__(self, env: dict[str, str], log_path: Path, nodename: str, queues: str = "training") -> None:
        self.env, self.log_path, self.nodename, self.queues = env, log_path, nodename, queues
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> CeleryWorker:
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.celery_app",
            "worker",
            "-Q",
            self.queues,
            "-c",
            "1",
            "--pool",
            "prefork",
            "-n",
            self.nodename,
            "--loglevel",
            "INFO",
            "--without-mingle",
            "--without-gossip",
        ]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    @property
    def node(self) -> str:
        """The node name with ``%h`` expanded as Celery does."""
        return self.nodename.replace("%h", socket.gethostname())

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once: no chance to clean up or acknowledge."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]


def worker_env(data_dir: Path, model_roots: list[Path] | None = None) -> dict[str, str]:
    """The environment of a worker (or server) process on the test database and Redis; its model roots are
    this process's (tests/workers/conftest.py adds pytest's temporary folder) unless given."""
    from django.conf import settings

    env = dict(os.environ)
    roots = settings.RLVR_MODEL_ROOTS if model_roots is None else model_roots
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url(),
            "RLVR_CHANNEL_LAYER": "redis",
            "RLVR_DATA_DIR": str(data_dir),
            "RLVR_RUNS_DIR": str(data_dir / "runs"),
            "RLVR_TOKEN_STORE": str(settings.RLVR_TOKEN_STORE),  # this process reads what the worker stores
            "RLVR_MODEL_ROOTS": ":".join(str(root) for root in roots),
            "RLVR_SECRET_KEY": "worker-test-secret-key-not-for-production",
            "CELERY_SKIP_CHECKS": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def wait_for(
    predicate: Callable[[], bool], timeout_s: float, what: str, worker: CeleryWorker | None = None
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        if worker is not None and worker.process is not None and worker.process.poll() is not None:
            raise AssertionError(f"the worker exited while waiting for {what}:\n{worker.log()}")
        time.sleep(0.1)
    raise AssertionError(
        f"timed out after {timeout_s}s waiting for {what}" + (f":\n{worker.log()}" if worker else "")
    )


class FakeRedis:
    """The few Redis commands the lease uses, with expiry on an injectable clock (thread-safe enough for
    one heartbeat thread)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.data: dict[str, tuple[bytes, float]] = {}

    def get(self, key: str) -> bytes | None:
        value = self.data.get(key)
        if value is None or value[1] <= self.clock():
            self.data.pop(key, None)
            return None
        return value[0]

    def set(self, key: str, value: str, ex: int, nx: bool = False) -> bool:
        if nx and self.get(key) is not None:
            return False
        self.data[key] = (value.encode(), self.clock() + ex)
        return True

    def delete(self, key: str) -> int:
        return 1 if self.data.pop(key, None) is not None else 0

    def scan_iter(self, match: str, count: int = 10) -> Iterator[str]:
        """The live keys matching the glob ``match`` (a run's node leases, webapp/experiments/run_lease.py)."""
        import fnmatch

        yield from [k for k in list(self.data) if fnmatch.fnmatchcase(k, match) and self.get(k) is not None]


@contextlib.contextmanager
def serve_daphne(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """The real web server (daphne, one process) with ``env`` on a free port; stopped on exit."""
    from webapp.stack import free_port, port_open

    port = free_port()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_for(lambda: port_open("127.0.0.1", port) or process.poll() is not None, 30, "daphne")
        assert process.poll() is None, log_path.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
