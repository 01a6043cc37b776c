"""``rlvr init-model`` says how far a build is and how long it has left, in the run page's words, even when
its output is a pipe or a log file (a short real build in a subprocess)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABEL = "Building the built-in model tiny:addition (warm-start SFT, once)"


@pytest.mark.slow  # a 20-step build of the tiny model in its own process
@pytest.mark.timeout(300)
def test_init_model_prints_the_builds_progress_and_time_left(tmp_path: Path) -> None:
    env = {**os.environ, "RLVR_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "trainer.cli", "init-model", "--model", "tiny:addition", "--sft-steps", "20"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith(LABEL)]
    assert re.fullmatch(
        re.escape(LABEL) + r": 1 / 20 steps · about (\d+h )?(\d+m )?\d+s? left", progress[0]
    ), progress
    assert re.fullmatch(re.escape(LABEL) + r": 20 / 20 steps · done in .+", progress[-1]), progress
    assert "\r" not in done.stderr  # not a terminal: whole lines, no rewriting
    assert done.stdout.strip().endswith(str(tmp_path / "home" / "models" / "addition-v4"))
