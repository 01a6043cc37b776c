"""The whole platform over real connections: daphne serves the API and the websocket, a Celery worker
trains, and the `rlvr` client logs in, lists runs and tails a run live until it succeeds."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.workers.helpers import (
    REPO,
    CeleryWorker,
    launch_run,
    make_project,
    make_user,
    tiny_experiment_config,
    wait_for,
    worker_env,
)
from webapp.stack import free_port, port_open


@pytest.fixture
def web_server(real_services: None, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = open(tmp_path / "daphne.log", "wb")  # noqa: SIM115 -- closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
        cwd=REPO,
        env=worker_env(tmp_path / "data"),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: port_open("127.0.0.1", port) or process.poll() is not None, 30, "daphne")
        assert process.poll() is None, (tmp_path / "daphne.log").read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_client_logs_in_lists_runs_and_tails_a_run_live_over_the_websocket(
    web_server: str, start_worker: Callable[[str], CeleryWorker], random_model_dir: Path, tmp_path: Path
) -> None:
    owner = make_user("alice")
    run = launch_run(owner, make_project(owner, "Lab"), tiny_experiment_config(random_model_dir, max_steps=3))
    env = {**worker_env(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}

    def rlvr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "webapp.cli", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    login = rlvr("login", "--url", web_server, "--username", "alice", "--password", "pw-alice-123")
    assert login.returncode == 0, login.stderr
    runs = rlvr("runs", "--project", "lab")
    assert runs.stdout.splitlines()[1].split()[:4] == [str(run.pk), "queued", "0/3", "lab"]

    tail = subprocess.Popen(
        [sys.executable, "-m", "webapp.cli", "tail", str(run.pk)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    start_worker("live@%h")
    out, err = tail.communicate(timeout=90)

    assert tail.returncode == 0, err
    assert "websocket unavailable" not in err
    lines = out.splitlines()
    assert [line.split()[1] for line in lines[:3]] == ["1/3", "2/3", "3/3"]
    assert lines[3] == f"run {run.pk} succeeded at step 3"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_embedded_stack_starts_serves_and_stops_every_process_on_ctrl_c(tmp_path: Path) -> None:
    import signal

    import httpx
    import psutil

    port = free_port()
    env = {
        k: v
        for k, v in worker_env(tmp_path).items()
        if k not in ("DATABASE_URL", "REDIS_URL", "RLVR_RUNS_DIR")
    }
    env["RLVR_DATA_DIR"] = str(tmp_path / "data")  # SQLite and an embedded Redis, both under it
    stack = subprocess.Popen(
        [sys.executable, "-m", "webapp.cli", "stack", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert stack.stdout is not None
        seen = []
        for line in stack.stdout:
            seen.append(line)
            if "is up" in line or stack.poll() is not None:
                break
        assert any("RLVR Studio is up" in line for line in seen), "".join(seen)
        answer = httpx.post(
            f"http://127.0.0.1:{port}/api/auth/token/", json={"username": "x", "password": "y"}
        )
        assert answer.status_code == 400 and "message" in answer.json()
        children = psutil.Process(stack.pid).children(recursive=True)
        names = " ".join(" ".join(child.cmdline()) for child in children)
        assert "redis-server" in names and "daphne" in names and "celery" in names
        logs = tmp_path / "data" / "logs"
        wait_for(lambda: "ready." in (logs / "worker.log").read_text(), 60, "the worker")
        wait_for(lambda: "ready." in (logs / "jobs-worker.log").read_text(), 60, "the eval/default worker")
        assert (
            httpx.get(f"http://127.0.0.1:{port}/api/").json()["docs"] == "/api/docs/"
        )  # the banner's API link

        stack.send_signal(signal.SIGINT)
        assert stack.wait(timeout=40) == 0
        _, alive = psutil.wait_procs(children, timeout=5)
        assert not alive, [p.cmdline() for p in alive]
    finally:
        if stack.poll() is None:
            stack.kill()
