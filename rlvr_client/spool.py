"""The client's spool: every batch is on disk before it is sent, and leaves the disk only when the server
has taken it.

Layout: ``<spool_dir>/<run key>/`` holds ``run.json`` (the run's description, and its server id once
known) and one file per batch, ``<sequence>.json``, numbered in the order they were made. A batch file is
written to a temporary name and renamed, so a crash leaves either the whole batch or none of it. The
sender takes the lowest number first and deletes it after a 2xx answer: a crash between the answer and
the delete sends that batch again, which the server applies idempotently, so nothing is lost or doubled.
A batch the server refuses (4xx: a bad value) moves to ``rejected/`` with the server's message beside it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr_client.wire import IngestError

KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
BATCH_NAME = re.compile(r"^(\d{12})\.json$")


def default_spool_dir() -> Path:
    explicit = os.environ.get("RLVR_SPOOL_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rlvr-studio" / "spool"


def check_key(key: str) -> str:
    if not KEY_PATTERN.match(key):
        raise IngestError(
            f"run key {key!r} must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return key


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True)
class SpooledBatch:
    path: Path
    sequence: int

    def read(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        return data


class RunSpool:
    """One run's folder in the spool."""

    def __init__(self, root: Path, key: str) -> None:
        self.dir = Path(root) / check_key(key)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        existing = [b.sequence for b in self.pending()]
        self._next = max(existing, default=0) + 1

    # --- the run's description -------------------------------------------------------------------

    def read_run(self) -> dict[str, Any] | None:
        path = self.dir / "run.json"
        if not path.exists():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data

    def write_run(self, run: dict[str, Any]) -> None:
        _write_atomic(self.dir / "run.json", json.dumps(run).encode("utf-8"))

    # --- batches -------------------------------------------------------------------------------------

    def append(self, batch: dict[str, Any]) -> SpooledBatch:
        sequence = self._next
        self._next += 1
        path = self.dir / f"{sequence:012d}.json"
        _write_atomic(path, json.dumps(batch, allow_nan=False).encode("utf-8"))
        return SpooledBatch(path, sequence)

    def pending(self) -> list[SpooledBatch]:
        batches = []
        for path in self.dir.iterdir():
            match = BATCH_NAME.match(path.name)
            if match:
                batches.append(SpooledBatch(path, int(match.group(1))))
        return sorted(batches, key=lambda b: b.sequence)

    def done(self, batch: SpooledBatch) -> None:
        batch.path.unlink(missing_ok=True)

    def reject(self, batch: SpooledBatch, message: str) -> Path:
        rejected = self.dir / "rejected"
        rejected.mkdir(exist_ok=True)
        target = rejected / batch.path.name
        os.replace(batch.path, target)
        (rejected / f"{batch.path.stem}.error.txt").write_text(message + "\n", encoding="utf-8")
        return target

    def rejected(self) -> list[Path]:
        folder = self.dir / "rejected"
        return sorted(folder.glob("*.json")) if folder.is_dir() else []

    def rejected_rollouts(self) -> int:
        """How many rollouts the batches in rejected/ hold (a file that cannot be read counts none)."""
        count = 0
        for path in self.rejected():
            try:
                rollouts = json.loads(path.read_text(encoding="utf-8")).get("rollouts")
            except (OSError, ValueError, AttributeError):
                continue
            count += len(rollouts) if isinstance(rollouts, list) else 0
        return count

    def is_empty(self) -> bool:
        return not self.pending()


def spooled_keys(root: Path) -> list[str]:
    """Run keys with batches still waiting in ``root`` (for ``rlvr sync``)."""
    root = Path(root)
    if not root.is_dir():
        return []
    keys = []
    for entry in sorted(root.iterdir()):
        if (
            entry.is_dir()
            and KEY_PATTERN.match(entry.name)
            and any(BATCH_NAME.match(p.name) for p in entry.iterdir())
        ):
            keys.append(entry.name)
    return keys
