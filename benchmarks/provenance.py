"""What a benchmark's results file records about the code and the models that produced it."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def code_revision(repo: Path = REPO) -> str:
    """The checkout's short commit, with ``+uncommitted`` when files other than results differ from it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True
        )
        dirty = (
            subprocess.run(  # results files are outputs, not code: writing one does not make the next dirty
                ["git", "status", "--porcelain", "--", ".", ":(exclude)benchmarks/results"],
                cwd=repo,
                capture_output=True,
                text=True,
            )
        )
    except OSError:
        return "unknown"
    return sha.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")


def weights_hash(model_dir: Path) -> str:
    """The first 12 hex digits of the sha256 over a model folder's safetensors files, in name order."""
    digest = hashlib.sha256()
    for f in sorted(model_dir.glob("*.safetensors")):
        digest.update(f.read_bytes())
    return digest.hexdigest()[:12]
