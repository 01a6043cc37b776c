"""One compose stack for the self-hosting tests (`make test-compose`), built and started once per session.

The tests need root, a running Docker engine and Compose v2: `bash deploy/compose/engine.sh` provides them
(`make test-compose` runs it). Plain `make test` leaves them out (the `compose` marker, pyproject.toml).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compose.stack import PASSWORD, REPO, Stack, wait_for

FIGURES = REPO / ".cache" / "compose-figures.json"


def record(stack: Stack, name: str, seconds: float) -> None:
    stack.timings[name] = round(seconds, 1)
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(stack.timings, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    stack = Stack()
    started = time.monotonic()
    subprocess.run(["bash", "deploy/compose/local-images.sh"], cwd=REPO, check=True, timeout=1800)
    record(stack, "local_base_images_s", time.monotonic() - started)
    stack.down("--volumes")  # a stack left by an interrupted session
    started = time.monotonic()
    stack.compose("build", timeout=2400)
    record(stack, "app_image_build_s", time.monotonic() - started)
    stack.up_started = time.monotonic()
    stack.up()
    record(stack, "up_to_healthy_s", time.monotonic() - stack.up_started)
    stack.compose("exec", "-T", "web", "rlvr", "createuser", "alice", "--password", PASSWORD)
    stack.login()
    try:
        yield stack
    finally:
        if os.environ.get("RLVR_COMPOSE_KEEP") != "1":
            stack.down("--volumes")


@pytest.fixture(scope="session")
def project_id(stack: Stack) -> int:
    return int(stack.post("/api/projects/", {"name": "Compose lab"})["id"])


def demo_config(*, max_steps: int, save_steps: int) -> dict[str, Any]:
    """The demo preset as it ships, shortened: fewer steps, more frequent checkpoints, no evaluation passes."""
    from trainer.presets import preset

    config = preset("demo")
    config["training"]["max_steps"] = max_steps
    config["checkpoint"]["save_steps"] = save_steps
    config["evaluation"] = {"benchmarks": [], "eval_at_start": False, "eval_at_end": False}
    return config


def launch(stack: Stack, project_id: int, name: str, config: dict[str, Any]) -> int:
    experiment = stack.post(f"/api/projects/{project_id}/experiments/", {"name": name, "config": config})
    return int(stack.post(f"/api/experiments/{experiment['id']}/runs/")["id"])


@pytest.fixture(scope="session")
def trained_run(stack: Stack, project_id: int) -> dict[str, Any]:
    """A short demo run, launched through the API and trained by the worker container to `succeeded`."""
    run_id = launch(stack, project_id, "compose demo", demo_config(max_steps=4, save_steps=2))
    wait_for(lambda: stack.run(run_id)["step"] >= 1, 900, f"run {run_id}'s first step")
    record(stack, "up_to_first_step_s", time.monotonic() - stack.up_started)
    return stack.wait_status(run_id, "succeeded", 600)
