"""The built-in models' weights as shipped in the repository, and writing them there.

A built-in model is trained from its recipe on one thread, which gives the same weights on every run on one
machine but not across processors (their kernels round differently: the chain student hashed differently on
two x86 servers, and capping every kernel library at AVX2 gave a third). So the repository carries the
weights built once, with their sha256, under ``trainer/models/weights/<cache name>/``: every checkout then
starts from the same models, whatever its processor, and the reproduction table's arms (keyed by model hash)
hold anywhere. A model is placed from there only when its recipe is exactly the shipped one (every setting,
``recipe_fingerprint``) and every file matches its recorded hash; otherwise it is built from the recipe.

``python -m trainer.models.shipped_weights`` builds every recipe from scratch in a temporary cache and writes
its files and ``MANIFEST.json`` here (after a recipe changes: bump its version, then run this).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from trainer.models.threads import processor
from trainer.models.tiny_recipes import RECIPES, TinyRecipe

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
MANIFEST = "MANIFEST.json"
# What a built model folder holds that is shipped (BUILDER and temporary files are not).
SHIPPED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "WARM_START.txt",
)


def recipe_fingerprint(recipe: TinyRecipe) -> str:
    """sha256 (16 hex) of every setting of ``recipe`` that is not code (steps, rate, sizes, seed, version...);
    what the recipe's functions draw is covered by its version, bumped when they change."""
    settings = {
        f.name: getattr(recipe, f.name)
        for f in dataclasses.fields(recipe)
        if not callable(getattr(recipe, f.name)) and f.name != "summary"
    }
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(weights_dir: Path | None = None) -> dict[str, Any]:
    path = (weights_dir or WEIGHTS_DIR) / MANIFEST
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def shipped_problem(recipe: TinyRecipe, weights_dir: Path | None = None) -> str | None:
    """None when ``recipe``'s shipped weights can be placed as they are; else why not, in a sentence."""
    weights_dir = weights_dir or WEIGHTS_DIR
    entry = read_manifest(weights_dir).get(recipe.cache_name)
    if entry is None:
        return f"no shipped weights for {recipe.name} version {recipe.version}"
    if entry.get("recipe") != recipe_fingerprint(recipe):
        return f"the shipped {recipe.name} was built with other recipe settings"
    folder = weights_dir / recipe.cache_name
    for name, digest in sorted(entry.get("files", {}).items()):
        path = folder / name
        if not path.is_file():
            return f"the shipped {recipe.name} lacks {name}"
        if file_sha256(path) != digest:  # a Git LFS pointer, a partial checkout, an edited file
            return f"the shipped {recipe.name}'s {name} does not match its recorded sha256"
    return None


def copy_shipped(recipe: TinyRecipe, dest: Path, weights_dir: Path | None = None) -> None:
    """Copy ``recipe``'s shipped files (those its manifest lists, checked by ``shipped_problem``) into ``dest``."""
    weights_dir = weights_dir or WEIGHTS_DIR
    for name in read_manifest(weights_dir)[recipe.cache_name]["files"]:
        shutil.copyfile(weights_dir / recipe.cache_name / name, dest / name)


def _with_origins(names: list[str]) -> list[str]:
    """``names`` and every model they start from, each after its origin."""
    out: list[str] = []

    def add(name: str) -> None:
        origin = RECIPES[name].start_from
        if origin:
            add(origin)
        if name not in out:
            out.append(name)

    for name in names:
        add(name)
    return out


def ship(names: list[str], weights_dir: Path | None = None, log: Any = print) -> dict[str, Any]:
    """Build each of ``names`` (and what it starts from) from its recipe in a fresh cache, each model in a process
    of its own as ``rlvr init-model --build`` builds it, copy the files into ``weights_dir`` and record their
    hashes in its manifest. Returns the manifest."""
    import os
    import subprocess

    weights_dir = weights_dir or WEIGHTS_DIR
    manifest = read_manifest(weights_dir)
    root = Path(__file__).resolve().parents[2]
    build = "import sys; from trainer.cli import main; sys.exit(main(['init-model', '--build', '--model', sys.argv[1]]))"
    with tempfile.TemporaryDirectory(prefix="rlvr-ship-") as home:
        env = {**os.environ, "RLVR_HOME": home, "PYTHONPATH": str(root)}
        for name in _with_origins(names):
            recipe = RECIPES[name]
            log(f"building {name} from its recipe ...")
            done = subprocess.run(
                [sys.executable, "-c", build, name], env=env, cwd=root, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise RuntimeError(f"building {name} failed:\n{done.stderr[-3000:]}")
            built = Path(home) / "models" / recipe.cache_name
            if name not in names:
                continue
            out = weights_dir / recipe.cache_name
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            files = {}
            for file in SHIPPED_FILES:
                if (built / file).is_file():
                    shutil.copyfile(built / file, out / file)
                    files[file] = file_sha256(out / file)
            manifest[recipe.cache_name] = {
                "model": name,
                "recipe": recipe_fingerprint(recipe),
                "files": files,
                "built_with": {"torch": _torch_version(), "processor": processor()},
            }
    live = {r.cache_name for r in RECIPES.values()}
    manifest = {k: v for k, v in sorted(manifest.items()) if k in live}
    for stale in weights_dir.iterdir() if weights_dir.is_dir() else []:
        if stale.is_dir() and stale.name not in live:  # an older version's folder
            shutil.rmtree(stale)
    (weights_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _torch_version() -> str:
    from importlib import metadata

    return metadata.version("torch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.models.shipped_weights",
        description="Build built-in models from their recipes and write them into trainer/models/weights/.",
    )
    parser.add_argument("models", nargs="*", default=list(RECIPES), help="built-in names (default: all)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in RECIPES]
    if unknown:
        parser.error(f"unknown built-in models {unknown}; valid: {', '.join(RECIPES)}")
    manifest = ship(args.models)
    for key, entry in manifest.items():
        print(f"{key}: {entry['files'].get('model.safetensors', '?')[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
