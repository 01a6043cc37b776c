"""Saved states of a Tinker training session: weights (for a sampler) and weights + optimizer + RNG (to resume).

A directory is written under a hidden temporary name, marked ``COMPLETE`` and renamed into place, as the
trainer's checkpoints are (trainer/models/checkpoint.py): a crash mid-write leaves nothing that looks usable.
The weights are ``save_pretrained`` safetensors (a LoRA session writes its adapter, which names the base
model), so ``load_causal_lm`` and ``rlvr export`` read them like any trainer checkpoint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from trainer.errors import CheckpointError
from trainer.models.checkpoint import COMPLETE_MARKER

STATE_FILE = "api_state.pt"
STATE_VERSION = 1


def write_model_dir(
    directory: Path,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    state: dict[str, Any] | None = None,
) -> Path:
    """Write the weights and tokenizer (and ``state``, when given) to ``directory`` atomically."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = directory.parent / f".tmp-{directory.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if state is not None:
            torch.save({"version": STATE_VERSION, **state}, tmp / STATE_FILE)
        (tmp / COMPLETE_MARKER).write_text("complete\n")
        if directory.exists():  # saving under the same name again replaces the old copy
            shutil.rmtree(directory)
        tmp.rename(directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def read_state(directory: Path) -> dict[str, Any]:
    """The optimizer, RNG and session facts of a state written by ``write_model_dir(..., state=...)``."""
    directory = Path(directory)
    if not (directory / COMPLETE_MARKER).exists() or not (directory / STATE_FILE).exists():
        raise CheckpointError(
            f"{directory} is not a complete training state (missing {COMPLETE_MARKER} or {STATE_FILE}): save "
            "one with save_state; weights saved for a sampler hold no optimizer state"
        )
    state: dict[str, Any] = torch.load(directory / STATE_FILE, map_location="cpu", weights_only=False)
    if state.get("version") != STATE_VERSION:
        raise CheckpointError(
            f"{directory} holds a training state of version {state.get('version')!r}; this server reads "
            f"version {STATE_VERSION}"
        )
    return state
