"""The built-in models' shipped weights (trainer/models/shipped_weights.py): every recipe has them, a model is
placed from them only when they are exactly its recipe's and intact, and otherwise it is built."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.trainer.build_helpers import QUICK_SFT_STEPS, quick_builds
from trainer.cli import main as rlvr
from trainer.models import shipped_weights, tiny_recipes
from trainer.models.shipped_weights import MANIFEST, file_sha256, recipe_fingerprint, shipped_problem
from trainer.models.tiny_model import BuildProgress, ensure_tiny_model, tiny_model_path


def test_every_recipe_ships_its_weights_at_its_version_and_settings() -> None:
    manifest = shipped_weights.read_manifest()
    for recipe in tiny_recipes.RECIPES.values():
        assert shipped_problem(recipe) is None, shipped_problem(recipe)
        assert manifest[recipe.cache_name]["model"] == recipe.name
        assert "model.safetensors" in manifest[recipe.cache_name]["files"]
    assert set(manifest) == {r.cache_name for r in tiny_recipes.RECIPES.values()}, "an old version is shipped"


def test_a_missing_model_is_placed_from_the_shipped_weights_without_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_HOME", str(tmp_path / "home"))
    heard: list[BuildProgress] = []
    said: list[str] = []
    path = ensure_tiny_model("tiny:chain", on_progress=heard.append, log=said.append)
    recipe = tiny_recipes.RECIPES["tiny:chain"]
    shipped = shipped_weights.WEIGHTS_DIR / recipe.cache_name
    assert path == tiny_model_path("tiny:chain") and heard == []
    assert said == [f"tiny:chain placed from the weights shipped with RLVR Studio in {path}"]
    assert file_sha256(path / "model.safetensors") == file_sha256(shipped / "model.safetensors")
    assert not (tiny_model_path("tiny:chain-teacher")).exists()  # only what was asked for
    assert not list(path.parent.glob(".build-*"))


def _own_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A copy of the shipped weights of ``name`` recorded for the quick recipe (so a fallback build is short)."""
    quick_builds(monkeypatch, tmp_path / "home")
    recipe = tiny_recipes.RECIPES[name]
    weights = tmp_path / "weights"
    shutil.copytree(shipped_weights.WEIGHTS_DIR / recipe.cache_name, weights / recipe.cache_name)
    manifest = shipped_weights.read_manifest()
    manifest[recipe.cache_name]["recipe"] = recipe_fingerprint(recipe)
    (weights / MANIFEST).write_text(json.dumps(manifest))
    monkeypatch.setattr(shipped_weights, "WEIGHTS_DIR", weights)
    assert shipped_problem(recipe) is None
    return weights / recipe.cache_name


def test_a_damaged_shipped_file_is_not_placed_the_model_is_built_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _own_weights(tmp_path, monkeypatch, "tiny:addition")
    pointer = (
        "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 4\n"  # an LFS checkout without LFS
    )
    (folder / "model.safetensors").write_text(pointer)
    recipe = tiny_recipes.RECIPES["tiny:addition"]
    assert (
        shipped_problem(recipe)
        == "the shipped tiny:addition's model.safetensors does not match its recorded sha256"
    )
    heard: list[BuildProgress] = []
    said: list[str] = []
    path = ensure_tiny_model("tiny:addition", on_progress=heard.append, log=said.append)
    assert len(heard) == QUICK_SFT_STEPS and "does not match its recorded sha256" in said[0]
    assert (path / "model.safetensors").read_bytes() != pointer.encode()
    (folder / "model.safetensors").unlink()
    assert shipped_problem(recipe) == "the shipped tiny:addition lacks model.safetensors"


def test_other_recipe_settings_or_steps_or_build_on_request_build_from_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _own_weights(tmp_path, monkeypatch, "tiny:addition")
    recipe = tiny_recipes.RECIPES["tiny:addition"]
    from dataclasses import replace

    assert shipped_problem(replace(recipe, lr=recipe.lr * 2)) == (
        "the shipped tiny:addition was built with other recipe settings"
    )
    assert shipped_problem(replace(recipe, version=recipe.version + 1)) == (
        f"no shipped weights for tiny:addition version {recipe.version + 1}"
    )
    heard: list[BuildProgress] = []
    ensure_tiny_model("tiny:addition", sft_steps=2, on_progress=heard.append, log=lambda m: None)
    assert [p.total for p in heard] == [2, 2]  # other steps than the recipe's: built
    shutil.rmtree(tiny_model_path("tiny:addition"))
    assert rlvr(["init-model", "--model", "tiny:addition", "--build"]) == 0
    out = capsys.readouterr().out
    assert "building the built-in model tiny:addition" in out and "built from its recipe on request" in out
    assert rlvr(["init-model", "--model", "tiny:addition", "--force"]) == 0  # the shipped weights again
    assert "placed from the weights shipped with RLVR Studio" in capsys.readouterr().out
