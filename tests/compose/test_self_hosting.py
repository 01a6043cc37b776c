"""`docker compose up` for real: the images built here without a registry of images, the stack started with
Compose v2, a demo run trained inside the worker container, pages, websocket and sandbox answering from
the containers, state kept across `down`/`up`, a killed worker recovered, a backup restored."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from tests.compose.conftest import demo_config, launch, record
from tests.compose.stack import PASSWORD, REPO, WEB_PORT, Stack, wait_for

pytestmark = [pytest.mark.compose, pytest.mark.timeout(2400)]


def test_a_demo_run_trains_to_succeeded_inside_the_worker_container(
    stack: Stack, trained_run: dict[str, Any]
) -> None:
    assert trained_run["status"] == "succeeded"
    assert trained_run["step"] == trained_run["max_steps"] == 4
    rewards = stack.get(f"/api/runs/{trained_run['id']}/metrics/", keys="rollout/reward_mean")["metrics"][
        "rollout/reward_mean"
    ]
    assert rewards["step"] == [1, 2, 3, 4]


def test_the_image_has_the_cpu_torch_and_runs_as_a_non_root_user(stack: Stack) -> None:
    out = stack.compose(
        "exec", "-T", "worker-cpu", "python", "-c", "import os, torch; print(os.getuid(), torch.__version__)"
    )
    assert out.split() == ["1000", "2.13.0+cpu"]


def test_the_run_page_and_the_rollout_browser_answer_through_the_web_container(
    trained_run: dict[str, Any],
) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{WEB_PORT}", timeout=30) as browser:
        browser.get("/accounts/login/")
        login = browser.post("/accounts/login/", data={
            "username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        }, headers={"Referer": f"http://127.0.0.1:{WEB_PORT}/accounts/login/"})  # fmt: skip
        assert login.status_code == 302, login.text[:300]
        page = browser.get(f"/runs/{trained_run['id']}/")
        rollouts = browser.get(f"/runs/{trained_run['id']}/rollouts/")
    assert page.status_code == 200 and "compose demo" in page.text
    assert rollouts.status_code == 200


def test_a_websocket_stream_answers_through_the_web_container(
    stack: Stack, trained_run: dict[str, Any]
) -> None:
    url = f"ws://127.0.0.1:{WEB_PORT}/ws/runs/{trained_run['id']}/?token={stack.token}"
    with connect(url, origin=f"http://127.0.0.1:{WEB_PORT}", open_timeout=20) as socket:  # type: ignore[arg-type]
        hello = json.loads(socket.recv(timeout=20))
        socket.send(json.dumps({"type": "ping"}))
        messages = [json.loads(socket.recv(timeout=20)) for _ in range(2)]
    assert hello["type"] == "run.hello" and hello["status"] == "succeeded"
    assert {"type": "pong"} in messages


def in_worker(stack: Stack, attack_name: str) -> dict[str, Any]:
    from tests.trainer.sandbox_attacks import ATTACKS

    attack = next(a for a in ATTACKS if a.name == attack_name)
    source = (Path(__file__).parent / "in_worker.py").read_text(encoding="utf-8")
    out = stack.compose(
        "exec", "-T", "-e", f"ATTACK_PROGRAM={attack.program}", "worker", "python", "-c", source
    )
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def test_a_code_verifier_scores_a_program_in_the_worker_containers_sandbox(stack: Stack) -> None:
    assert in_worker(stack, "tcp_to_redis")["rewards"] == [1.0, 0.0]


def test_a_sandbox_attack_on_the_hosts_redis_is_refused_in_the_worker_container(stack: Stack) -> None:
    # Host networking: the machine's own Redis on 127.0.0.1:6379 is one connect() away, were it allowed.
    result = in_worker(stack, "tcp_to_redis")
    assert result["attack_stdout"].startswith("refused 1"), result


def test_the_logs_show_one_line_per_request_and_per_training_step(
    stack: Stack, trained_run: dict[str, Any]
) -> None:
    stack.get(f"/api/runs/{trained_run['id']}/")
    web = stack.compose("logs", "--no-color", "web")
    training = stack.compose("logs", "--no-color", "worker-cpu")
    assert re.search(rf'"GET /api/runs/{trained_run["id"]}/" 200 ', web), web[-2000:]
    steps = re.findall(rf"run {trained_run['id']}: step (\d+)/4\b", training)
    assert steps == ["1", "2", "3", "4"], training[-3000:]


def test_down_then_up_keeps_users_runs_rollouts_and_checkpoints(
    stack: Stack, trained_run: dict[str, Any]
) -> None:
    run_id = trained_run["id"]
    before = (
        stack.get(f"/api/runs/{run_id}/rollouts/", page_size=500)["count"],
        stack.get(f"/api/runs/{run_id}/checkpoints/"),
    )
    stack.down()
    stack.up()
    stack.login()  # alice's password still works: the users survived
    after = (
        stack.get(f"/api/runs/{run_id}/rollouts/", page_size=500)["count"],
        stack.get(f"/api/runs/{run_id}/checkpoints/"),
    )
    assert stack.run(run_id)["status"] == "succeeded"
    assert after == before and before[0] > 0


def test_a_killed_worker_is_restarted_by_compose_and_the_run_resumes_from_its_checkpoint(
    stack: Stack, project_id: int, trained_run: dict[str, Any]
) -> None:
    run_id = launch(stack, project_id, "compose kill", demo_config(max_steps=16, save_steps=3))
    wait_for(lambda: stack.run(run_id)["step"] >= 5, 900, "a step past the first checkpoint")
    subprocess.run(["kill", "-KILL", str(stack.container_pid("worker-cpu"))], check=True)
    killed = time.monotonic()
    stack.wait_status(run_id, "succeeded", 900)
    record(stack, "killed_worker_to_succeeded_s", time.monotonic() - killed)
    events = json.dumps(stack.get(f"/api/runs/{run_id}/events/"))
    assert re.search(r"resuming from the checkpoint at step (3|6|9|12)\b", events), events[:3000]


def test_a_backup_restores_users_runs_and_checkpoints_into_an_emptied_stack(
    stack: Stack, trained_run: dict[str, Any], tmp_path: Path
) -> None:
    run_id = trained_run["id"]
    checkpoints = stack.get(f"/api/runs/{run_id}/checkpoints/")
    env = {**stack.env(), "COMPOSE": " ".join(stack.command())}
    subprocess.run(
        ["bash", "deploy/compose/backup.sh", str(tmp_path)], cwd=REPO, env=env, check=True, timeout=600
    )
    stack.down("--volumes")
    subprocess.run(
        ["bash", "deploy/compose/restore.sh", str(tmp_path)], cwd=REPO, env=env, check=True, timeout=900
    )
    stack.up()
    stack.login()
    assert stack.run(run_id)["status"] == "succeeded"
    assert stack.get(f"/api/runs/{run_id}/checkpoints/") == checkpoints
    assert checkpoints and not any(c["deleted"] for c in checkpoints)  # their files came back with the volume
