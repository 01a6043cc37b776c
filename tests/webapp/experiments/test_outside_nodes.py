"""A run over two hosts started without Celery: two torchrun agents on loopback (standing for two nodes under
srun or a shell on each) run ``rlvr train run.yaml --report-to PROJECT``; they meet at a c10d rendezvous,
train as one data-parallel group, and global rank 0 sends the run in with the ingest client, so it appears in
the dashboard once, with every step's metrics and rollouts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User

from tests.processes import live_processes
from tests.trainer.loop_helpers import tiny_config
from trainer.distributed.rendezvous import endpoint_of, rendezvous_port
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import MetricPoint, Rollout, Run, RunStatus
from webapp.teams.models import Project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
LOOPBACK = "127.0.0.1"
REPO = Path(__file__).resolve().parents[3]


def _agent(index: int, endpoint: str, config: Path, project: str) -> list[str]:
    """One node's torchrun agent, as a user's script or Slurm job would start it on its host."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes=2",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={endpoint}",
        "--rdzv-id=outside-test",
        f"--rdzv-conf=is_host={'true' if index == 0 else 'false'},join_timeout=60",
        f"--local-addr={LOOPBACK}",
        "--max-restarts=0",
        "-m",
        "trainer.cli",
        "train",
        str(config),
        "--report-to",
        project,
        "--report-name",
        "two-hosts-outside",
    ]


@pytest.mark.django_db(transaction=True)
def test_a_run_started_by_torchrun_on_two_nodes_appears_in_the_dashboard_once(
    live_server: Any, alice: User, project: Project, random_model_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"  # the shared run folder (one machine here; a shared filesystem across hosts)
    config = tiny_config(
        random_model_dir,
        out,
        training={"num_nodes": 2, "num_processes": 1, "max_steps": 3, "prompts_per_step": 2},
        checkpoint={"save_steps": 3},
    )
    config_file = tmp_path / "run.yaml"
    config_file.write_text(yaml.safe_dump(config.model_dump(mode="json")), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
        "RLVR_URL": str(live_server.url),
        "RLVR_TOKEN": issue_token(alice).token,
        "RLVR_SPOOL_DIR": str(tmp_path / "spool"),
    }
    env.pop("RLVR_DIST_RANK", None)
    endpoint = endpoint_of(LOOPBACK, rendezvous_port(LOOPBACK))
    agents = [
        subprocess.Popen(
            _agent(i, endpoint, config_file, project.slug),
            env=env,
            cwd=tmp_path,
            stdout=open(tmp_path / f"node{i}.log", "wb"),  # noqa: SIM115 (closed with the process)
            stderr=subprocess.STDOUT,
        )
        for i in range(2)
    ]
    codes = [a.wait(timeout=240) for a in agents]
    logs = "\n".join((tmp_path / f"node{i}.log").read_text(errors="replace")[-3000:] for i in range(2))
    assert codes == [0, 0], logs

    runs = Run.objects.filter(experiment__project=project)
    assert runs.count() == 1, logs  # one run, not one per node or per rank
    run = runs.get()
    assert (run.status, run.step, run.source) == (RunStatus.SUCCEEDED, 3, "script")
    assert run.config["training"]["num_nodes"] == 2
    # every step's metrics, once each, as rank 0 recorded them in the run folder
    written = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert [row["step"] for row in written] == [1, 2, 3]
    stored = list(MetricPoint.objects.filter(run=run).values_list("step", "key", "value"))
    assert len(stored) == len({(step, key) for step, key, _ in stored})
    for row in written:
        for key in ("rollout/reward_mean", "actor/loss"):
            if key in row:
                value = next(v for s, k, v in stored if s == row["step"] and k == key)
                assert value == pytest.approx(row[key], rel=1e-9, abs=1e-12), (row["step"], key)
    assert Rollout.objects.filter(run=run).count() == 3 * 2 * 8  # steps x prompts x completions
    assert list(run.checkpoints.values_list("step", flat=True)) == [3]
    assert live_processes(str(config_file), "trainer.cli") == []
