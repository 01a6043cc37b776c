"""What an arm is and where it is stored: its spec, its key, and reading a stored arm. No torch, no model files.

An arm's key says WHAT was trained, never with which code: sha256 of the store version, the full config (models
by their built-in NAMES such as ``tiny:chain``, never paths or weight hashes), the seed and step count (both in
the config), the evaluation spec, and, for a method that needs an offline pass (ThinkPrior's anchor pass), that
pass's declared spec instead of the file it writes. So the key is computable on any checkout without building a
model or running a pass, and a later change to trainer/ keeps every stored arm. Which code, commit, lock file
and model weights produced an arm is recorded inside it as provenance (provenance.py), and a row whose code has
changed since is shown as stale (reach.py), not silently dropped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import arm_config
from benchmarks.reproduce.evaluation import EVAL, EvalSpec
from benchmarks.reproduce.measures import ArmResult

STORE_VERSION = 4  # bump when what an arm's key covers changes (4: keyed by what was trained, not the code)
RUN_DIR = "<run-dir>"  # the checkpoint folder as keyed (a temporary folder when trained)


@dataclass(frozen=True)
class PrepareSpec:
    """An offline pass an arm needs before training: ``fn`` ('module:function', called at training time as
    ``fn(store, config, spec) -> (overrides, cost)``) and its declared ``spec`` (what is keyed)."""

    fn: str
    spec: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"fn": self.fn, "spec": self.spec}


@dataclass(frozen=True)
class ArmSpec:
    """What to train: the overrides on the baseline, a seed, the length, and an offline pass it needs first."""

    overrides: dict[str, Any]
    seed: int
    steps: int
    eval_every: int
    eval: EvalSpec = EVAL
    prepare: PrepareSpec | None = None

    def config(self, output_dir: str = RUN_DIR) -> dict[str, Any]:
        return arm_config(self.overrides, self.seed, self.steps, output_dir, self.eval_every)

    def to_json(self) -> dict[str, Any]:
        """Everything needed to train the arm again (on another checkout: see retrain.py)."""
        return {
            "overrides": self.overrides,
            "seed": self.seed,
            "steps": self.steps,
            "eval_every": self.eval_every,
            "eval": self.eval.to_json(),
            "prepare": self.prepare.to_json() if self.prepare else None,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> ArmSpec:
        prepare = data.get("prepare")
        return ArmSpec(
            data["overrides"],
            int(data["seed"]),
            int(data["steps"]),
            int(data["eval_every"]),
            EvalSpec(**data["eval"]),
            PrepareSpec(prepare["fn"], prepare["spec"]) if prepare else None,
        )


def keyed(spec: ArmSpec) -> dict[str, Any]:
    """What the key hashes (also stored in the arm, so a reader can see what was trained)."""
    return {
        "v": STORE_VERSION,
        "config": spec.config(),
        "eval": spec.eval.to_json(),
        "prepare": spec.prepare.to_json() if spec.prepare else None,
    }


def arm_key(spec: ArmSpec) -> str:
    """sha256 (20 hex) of ``keyed(spec)``: the same on every checkout, whatever its code or built weights."""
    blob = json.dumps(keyed(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def stored_path(store: Path, key: str) -> Path:
    return store / f"{key}.json.gz"


def load_arm(path: Path) -> ArmResult:
    with gzip.open(path, "rt") as f:
        return ArmResult.from_json(json.load(f))


def write_arm(path: Path, result: ArmResult) -> None:
    """Whole or absent: a crash mid-write leaves no half result. ``mtime=0``: the same arm, the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    blob = json.dumps(result.to_json(), separators=(",", ":"), sort_keys=True).encode()
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(blob)
    tmp.replace(path)


@dataclass
class ArmCache:
    """Stored arms read once per command (a row and its comparisons share arms)."""

    store: Path
    loaded: dict[str, ArmResult | None] = field(default_factory=dict)

    def get(self, key: str) -> ArmResult | None:
        if key not in self.loaded:
            path = stored_path(self.store, key)
            self.loaded[key] = load_arm(path) if path.is_file() else None
        return self.loaded[key]
