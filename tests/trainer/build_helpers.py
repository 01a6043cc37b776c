"""Real but short builds of the built-in models, for tests of what a first-use build reports."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from trainer.models import tiny_recipes

QUICK_SFT_STEPS = 5  # instead of hundreds: about a second per model on 2 cores


def quick_builds(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """An empty model cache at ``home`` (RLVR_HOME) and every recipe cut to QUICK_SFT_STEPS warm-start
    steps, so a test that needs a build does one for real without waiting minutes."""
    monkeypatch.setenv("RLVR_HOME", str(home))
    for name, recipe in list(tiny_recipes.RECIPES.items()):
        monkeypatch.setitem(tiny_recipes.RECIPES, name, replace(recipe, sft_steps=QUICK_SFT_STEPS))
    return home
