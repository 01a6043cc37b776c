"""What a stored arm result depends on besides its config: the code that trains and evaluates it, and the
model files it starts from.

``code_revision()`` hashes the bytes of every file that can change an arm's numbers: the trainer package and
the harness modules that train and evaluate an arm (not the ones that compute statistics or write the
table, so rewording the table keeps the stored arms), plus the torch and transformers versions. It is a
content hash, so uncommitted edits count and a commit that touches only docs keeps every stored arm.
``model_hash(path)`` hashes a model directory's weights, config and tokenizer files.
"""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
# The harness's own modules whose code reaches an arm's numbers (baseline, arm training, evaluation).
ARM_MODULES = ("arms.py", "baseline.py", "evaluation.py", "prepare.py", "provenance.py")
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


@cache
def code_revision() -> str:
    """sha256 (16 hex) of trainer/**/*.py, the arm-level harness modules and the torch/transformers versions."""
    import torch
    import transformers

    digest = hashlib.sha256(f"torch={torch.__version__};transformers={transformers.__version__}".encode())
    here = Path(__file__).resolve().parent
    files = sorted((ROOT / "trainer").rglob("*.py")) + [here / name for name in ARM_MODULES]
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


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


def git_commit() -> str:
    """The checkout's HEAD (12 hex, '+dirty' with uncommitted changes), or 'unknown' outside git: shown, not keyed."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "trainer", "benchmarks/reproduce"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")
