"""The ingest client's spool across a real server restart: daphne is killed in the middle of a run, the
script goes on logging, daphne comes back, and every step is on the server exactly once."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from rlvr_client import start_run
from rlvr_client.spool import RunSpool
from tests.workers.helpers import REPO, make_project, make_user, wait_for, worker_env
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import MetricPoint, Rollout, Run, RunStatus
from webapp.stack import free_port, port_open


class Daphne:
    def __init__(self, port: int, data_dir: Path, log: Path) -> None:
        self.port, self.data_dir, self.log = port, data_dir, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "webapp.asgi:application",
                ],
                cwd=REPO,
                env=worker_env(self.data_dir),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for(lambda: port_open("127.0.0.1", self.port) or self.process.poll() is not None, 30, "daphne")
        assert self.process.poll() is None, self.log.read_text()

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)
        wait_for(lambda: not port_open("127.0.0.1", self.port), 10, "the port to close")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_spool_survives_a_server_restart_with_no_step_lost_or_doubled(
    real_services: None, tmp_path: Path
) -> None:
    owner = make_user("alice")
    project = make_project(owner, "Lab")
    server = Daphne(free_port(), tmp_path / "data", tmp_path / "daphne.log")
    server.start()
    try:
        run = start_run(
            project=project.slug,
            name="restart",
            url=f"http://127.0.0.1:{server.port}",
            token=issue_token(owner).token,
            spool_dir=tmp_path / "spool",
            max_steps=30,
            flush_interval_s=0.05,
        )
        run.retry_interval_s = 0.5

        def log(step: int) -> None:
            run.log_metrics(step, {"rollout/reward_mean": step / 100, "perf/step_s": 1.0})
            run.log_rollouts(
                step,
                [
                    {
                        "group": g,
                        "sample_index": i,
                        "prompt": f"p{g}",
                        "completion": f"c{step}",
                        "tokens": ["c", f"{step}"],
                        "token_ids": [1, 2],
                        "reward": 1.0,
                        "token_values": {"advantage": [0.1, 0.1]},
                    }
                    for g in range(2)
                    for i in range(2)
                ],
            )

        for step in range(1, 11):
            log(step)
        assert run.flush(timeout_s=30)
        server.kill()
        for step in range(11, 21):  # the server is down: these wait in the spool
            log(step)
        assert not run.flush(timeout_s=5)
        assert RunSpool(tmp_path / "spool", run.key).pending()
        server.start()
        for step in range(21, 31):
            log(step)
        assert run.finish("succeeded", timeout_s=60)
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.terminate()
            server.process.wait(timeout=10)

    stored = Run.objects.get(pk=run.run_id)
    assert stored.status == RunStatus.SUCCEEDED and stored.step == 30
    steps = Counter(
        MetricPoint.objects.filter(run=stored, key="rollout/reward_mean").values_list("step", flat=True)
    )
    assert sorted(steps) == list(range(1, 31)) and set(steps.values()) == {1}
    per_step = Counter(Rollout.objects.filter(run=stored).values_list("step", flat=True))
    assert per_step == {step: 4 for step in range(1, 31)}
    assert Run.objects.count() == 1
