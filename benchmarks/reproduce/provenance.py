"""What produced a stored arm, recorded inside it (not keyed): the git commit, the code revision, the lock file's
hash, the installed torch/transformers versions, the hashes of the model files it started from, the full config.

``code_revision()`` hashes the bytes of every trainer/**/*.py file and of the harness modules that train and
evaluate an arm, plus the torch and transformers versions (read from the installed distributions' metadata, so
no torch import): a content hash, shown with each arm so a reader sees which code produced it. Staleness is
judged per row from the files that actually reached it (reach.py), not from this hash.
``model_hash(path)`` hashes a model directory's weights, config and tokenizer files.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from trainer.models.threads import processor

ROOT = Path(__file__).resolve().parent.parent.parent
LOCK = ROOT / "deploy" / "requirements.lock"
# The harness's own modules whose code reaches an arm's numbers (baseline, arm training, evaluation).
ARM_MODULES = ("arms.py", "baseline.py", "evaluation.py", "prepare.py", "provenance.py", "store.py")
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def versions() -> dict[str, str]:
    """The installed versions that change results (torch, transformers), without importing them."""
    return {"torch": _version("torch"), "transformers": _version("transformers")}


@cache
def code_revision() -> str:
    """sha256 (16 hex) of trainer/**/*.py, the arm-level harness modules and the torch/transformers versions."""
    v = versions()
    digest = hashlib.sha256(f"torch={v['torch']};transformers={v['transformers']}".encode())
    here = Path(__file__).resolve().parent
    files = sorted((ROOT / "trainer").rglob("*.py")) + [here / name for name in ARM_MODULES]
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def file_hash(path: Path) -> str:
    """sha256 (16 hex) of a file's bytes, or 'absent'."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "absent"


def lock_hash() -> str:
    """The hash of deploy/requirements.lock: the pinned versions every arm was trained with."""
    return file_hash(LOCK)


@cache
def model_hash(model_dir: str) -> str:
    """sha256 (16 hex) of a model directory's *.safetensors / *.bin weights and its config and tokenizer files."""
    root = Path(model_dir)
    names = sorted(p.name for p in root.iterdir() if p.suffix in (".safetensors", ".bin")) + list(MODEL_FILES)
    digest = hashlib.sha256()
    found = False
    for name in names:
        path = root / name
        if path.is_file():
            found = True
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    if not found:
        raise FileNotFoundError(f"{model_dir} holds no model files to hash")
    return digest.hexdigest()[:16]


def models(config: dict[str, Any]) -> dict[str, str]:
    """{role: model hash} of the model directories and files the (resolved) config starts from: training time
    only (a built-in model is built here if it is missing)."""
    from trainer.models.tiny_model import resolve_model_path

    out = {"policy": model_hash(str(resolve_model_path(config["model"]["name_or_path"])))}
    teacher = (config.get("teacher") or {}).get("name_or_path")
    if teacher:
        out["teacher"] = model_hash(str(resolve_model_path(teacher)))
    scorer = (config.get("process_reward") or {}).get("scorer") or {}
    scorer_model = (scorer.get("params") or {}).get("model")
    if scorer_model:  # a step scorer's model (the tiny chain PRM is built on first use)
        from trainer.process.records import step_scorer_model

        out["step_scorer"] = model_hash(step_scorer_model(scorer_model))
    prior = (config.get("budget") or {}).get("prior_file")
    if prior:
        out["prior_file"] = file_hash(Path(prior))
    return out


def git_commit(root: Path = ROOT) -> str:
    """The checkout's HEAD (12 hex, '+dirty' with uncommitted changes under trainer/ or the harness), or
    'unknown' outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--",
                "trainer",
                "benchmarks/reproduce/*.py",
                "deploy/requirements.lock",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def record(config: dict[str, Any]) -> dict[str, Any]:
    """The provenance stored with an arm trained now from the resolved ``config``."""
    return {
        "git_commit": git_commit(),
        "code_revision": code_revision(),
        "lock": lock_hash(),
        "versions": versions(),
        "models": models(config),
        "processor": processor(),  # the same weights train to other floats on another processor
        "config": config,
    }
