"""A launcher killed outright (SIGKILL, as the OOM killer or `kill -9` would) leaves no rank behind: torchrun
gets SIGTERM when its parent dies, and each rank gets SIGKILL when torchrun dies (issue 8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.trainer.test_distributed_runs import _rank_processes

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from pathlib import Path
from tests.trainer.loop_helpers import tiny_config
from trainer.step.loop import train
train(tiny_config(Path(sys.argv[1]), Path(sys.argv[2]), training={"num_processes": 2, "max_steps": 100000}))
"""


@pytest.mark.slow
def test_killing_the_launcher_takes_every_rank_down(random_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    events = out / "distributed" / "events.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    launcher = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(random_model_dir), str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while not (events.exists() and '"step"' in events.read_text()):  # the ranks are training
            assert launcher.poll() is None and time.monotonic() < deadline, "the run never reached step 1"
            time.sleep(0.2)
        assert len(_rank_processes(str(out.resolve()))) == 3  # torchrun and its two ranks
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
    deadline = time.monotonic() + 20
    while _rank_processes(str(out.resolve())) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _rank_processes(str(out.resolve())) == []
