"""A built-in model builds to the same weights whatever the thread count and the working directory.

The chain teacher, warm-started for 20 steps, came out different with one and with two torch threads before
builds were pinned to one thread (trainer/models/tiny_model.py ``one_thread``); the reproduction table's stored
arms name their models by hash, so a fresh clone must build exactly those weights.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

BUILD = """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
from trainer.models.tiny_model import ensure_tiny_model
path = ensure_tiny_model("tiny:chain-teacher", sft_steps=20, log=lambda _: None)
assert torch.get_num_threads() == int(sys.argv[1]), "the build left the caller's thread count changed"
print(path)
"""


def _build(home: Path, cwd: Path, threads: int) -> bytes:
    cwd.mkdir(parents=True)
    env = {**os.environ, "RLVR_HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("RLVR_TORCH_THREADS", None)
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(threads)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    model_dir = Path(done.stdout.strip().splitlines()[-1])
    assert model_dir.is_relative_to(home)
    return (model_dir / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_two_builds_in_different_places_with_different_thread_counts_give_the_same_weights(
    tmp_path: Path,
) -> None:
    one = _build(tmp_path / "home-a", tmp_path / "cwd-a", threads=2)
    two = _build(tmp_path / "home-b", tmp_path / "elsewhere" / "cwd-b", threads=1)
    assert hashlib.sha256(one).hexdigest() == hashlib.sha256(two).hexdigest()
