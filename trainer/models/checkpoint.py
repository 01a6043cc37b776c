"""Checkpoints: everything a run needs to continue exactly where it stopped.

Layout: ``<output_dir>/checkpoints/step-000050/`` holding the model (safetensors, ``save_pretrained``),
the tokenizer, and ``trainer_state.pt`` (optimizer, LR scheduler, every RNG state, the prompt sampler's
position, the step, the config). A checkpoint is written into a hidden temporary directory and renamed
into place, then marked ``COMPLETE``; a crash mid-write leaves no checkpoint that looks usable.
"""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.errors import CheckpointError

STATE_FILE = "trainer_state.pt"
COMPLETE_MARKER = "COMPLETE"
_STEP_DIR = re.compile(r"^step-(\d+)$")


@dataclass
class TrainerState:
    step: int
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    sampler: dict[str, Any]
    rng: dict[str, Any]
    config: dict[str, Any]
    base_model_path: str  # the original policy weights: the KL reference is always this model
    # An asynchronous run's rollouts generated for later steps (trainer/step/async_rollouts.py ``Produced``);
    # ``sampler`` and ``rng["sampling"]`` are then the generator's state after the last of them.
    rollout_buffer: list[Any] | None = None
    # perf/elapsed_s and perf/tokens_total so far (trainer/step/progress.py): a resumed run continues them.
    # None in checkpoints written before they existed.
    progress: dict[str, float] | None = None
    # The reward-hacking watch's window and flag (trainer/rewards/hacking.py); None without a watch or in older ones.
    reward_watch: dict[str, Any] | None = None
    # A stateful step scorer's state (trainer/process/base.py ``ScorerState``: the implicit PRM's optimizer); its
    # models are in subfolders of the step folder. None without one or in older checkpoints.
    scorer_state: dict[str, Any] | None = None


def capture_rng(generator: torch.Generator) -> dict[str, Any]:
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "sampling": generator.get_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any], generator: torch.Generator) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    generator.set_state(state["sampling"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoints_dir(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


def list_checkpoints(output_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first."""
    root = checkpoints_dir(output_dir)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        m = _STEP_DIR.match(child.name)
        if m and (child / COMPLETE_MARKER).exists():
            found.append((int(m.group(1)), child))
    return [p for _, p in sorted(found)]


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    ckpts = list_checkpoints(output_dir)
    return ckpts[-1] if ckpts else None


def save_checkpoint(
    output_dir: str | Path,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    state: TrainerState,
    keep: int,
    model_state_dict: dict[str, torch.Tensor] | None = None,
    extra_models: dict[str, PreTrainedModel] | None = None,
) -> Path:
    """Write a checkpoint atomically and prune old ones down to ``keep``. Returns its directory.

    ``model_state_dict``: the full weights when ``model`` holds only a shard of them (trainer/distributed/fsdp.py); the
    files are the same as for an unsharded model. ``extra_models``: more models saved in subfolders, by name (a
    stateful step scorer's, e.g. ``implicit_prm/``), inside the same atomic write."""
    root = checkpoints_dir(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{state.step:06d}"
    tmp = root / f".tmp-step-{state.step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    model.save_pretrained(tmp, safe_serialization=True, state_dict=model_state_dict)
    tokenizer.save_pretrained(tmp)
    for name, extra in (extra_models or {}).items():
        extra.save_pretrained(tmp / name, safe_serialization=True)
    torch.save(state.__dict__, tmp / STATE_FILE)
    (tmp / COMPLETE_MARKER).write_text(f"{state.step}\n")
    if final.exists():  # re-saving the same step (e.g. cancel right after a periodic save)
        shutil.rmtree(final)
    tmp.rename(final)
    for old in list_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def resolve_checkpoint_dir(checkpoint: str | Path) -> Path:
    """A step directory as given, or the latest complete checkpoint of a run directory."""
    path = Path(checkpoint)
    if path.is_dir() and path.name == "checkpoints":
        path = path.parent
    if path.is_dir() and not (path / STATE_FILE).exists():
        latest = latest_checkpoint(path)
        if latest is None:
            raise CheckpointError(
                f"{path} holds no complete checkpoint (looked in {checkpoints_dir(path)}); "
                "start without --resume or point it at a step-NNNNNN directory"
            )
        return latest
    return path


def load_state(checkpoint_dir: Path) -> TrainerState:
    """Read a checkpoint's trainer state; the weights are loaded with ``from_pretrained(checkpoint_dir)``."""
    if not (checkpoint_dir / COMPLETE_MARKER).exists() or not (checkpoint_dir / STATE_FILE).exists():
        raise CheckpointError(
            f"{checkpoint_dir} is not a complete checkpoint (missing {COMPLETE_MARKER} or {STATE_FILE})"
        )
    raw = torch.load(checkpoint_dir / STATE_FILE, map_location="cpu", weights_only=False)
    return TrainerState(**raw)
