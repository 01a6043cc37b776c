"""Shared fixtures: the tiny models every trainer test uses, built locally once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
# Tests never touch the user's own cache: the tiny model is built once per clone, inside it.
os.environ.setdefault("RLVR_HOME", str(REPO / ".cache" / "rlvr-home"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def random_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A freshly initialised (untrained) tiny model: fast to build, for mechanics tests."""
    from trainer.models.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("random-tiny"), hidden=64, layers=2, heads=2)


@pytest.fixture(scope="session")
def warm_model_dir() -> Path:
    """The built-in warm-started tiny model (cached under RLVR_HOME; ~1 min to build the first time)."""
    from trainer.models.tiny_model import ensure_tiny_model

    return ensure_tiny_model(log=lambda msg: None)
