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


TOKENIZER_CONFIG = """
import sys
from trainer.models.tiny_model import ensure_tiny_model
path = ensure_tiny_model("tiny:addition", sft_steps=1, log=lambda _: None, from_recipe=True)
sys.stdout.write((path / "tokenizer_config.json").read_text())
"""


@pytest.mark.slow
def test_a_build_writes_the_same_tokenizer_files_online_or_offline(tmp_path: Path) -> None:
    """transformers writes how the tokenizer was loaded (``local_files_only``, from HF_HUB_OFFLINE) into
    tokenizer_config.json; a build leaves it out, so its model hash does not depend on the environment."""
    written = []
    for offline in ("0", "1"):
        env = {**os.environ, "RLVR_HOME": str(tmp_path / offline), "HF_HUB_OFFLINE": offline}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        done = subprocess.run(
            [sys.executable, "-c", TOKENIZER_CONFIG], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        written.append(done.stdout)
    assert written[0] == written[1] and "local_files_only" not in written[0]
