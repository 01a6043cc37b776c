"""What a benchmark's results file records about the code and the models that produced it."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def timing_header(threads: int, torch_version: str) -> dict[str, Any]:
    """What a timing benchmark's results file records about its run: the command, the code revision, the torch
    threads, the load average before it and the machine."""
    return {
        "command": " ".join(["python", *sys.argv]),
        "revision": code_revision(),
        "threads": threads,
        "load_before": os.getloadavg(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "torch": torch_version},
    }


def timing_sentence(header: dict[str, Any]) -> str:
    """The first sentence of a timing benchmark's Markdown: how it was run, from ``timing_header``'s record."""
    return (
        f"`{header['command']}` at {header['revision']}, {header['machine']['cpus']} CPUs, "
        f"{header['threads']} torch threads, load average {header['load_before'][0]:.2f} before."
    )
