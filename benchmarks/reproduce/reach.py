"""The code that reaches a row, and whether it has changed since the row's arms were trained (staleness).

Keys say what was trained, not with which code (store.py), so a change to trainer/ keeps every stored arm; the
table must then say which rows that change may have moved. When a row's arms are trained, ``record`` runs a
SHORT traced pass (the first steps of seed 0 of each of the row's arms, a few held-out problems) under a
function-level tracer (``sys.settrace`` noting each called frame's file and returning None, so lines are not
traced) and stores the row's reach: every file under trainer/ and every arm-level harness module that executed,
with its content hash then, plus the lock file's hash (``reach/<row>.json``). A row is stale when one of those
files or the lock file differs today; a row trained before reach records existed is stale when its arms' code
revision differs from today's. ``--verify-stale`` re-runs that short pass and, when its metrics equal the
stored arms' first steps exactly, stamps the reach as current ("verified"): the change did not reach the numbers.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from benchmarks.reproduce.evaluation import EvalSpec
from benchmarks.reproduce.measures import ArmResult
from benchmarks.reproduce.provenance import (
    ARM_MODULES,
    ROOT,
    code_revision,
    file_hash,
    git_commit,
    lock_hash,
)

T = TypeVar("T")
SHORT_STEPS = 2  # the traced / verifying pass: this many training steps of seed 0
SHORT_EVAL = EvalSpec(greedy_problems=8, sampled_problems=4, curve_problems=4, batch=8)
SHOWN_CHANGES = 3  # changed files named in the table before "and N more"
HARNESS = "benchmarks/reproduce/"


def _reaches(rel: str) -> bool:
    return rel.startswith("trainer/") or (rel.startswith(HARNESS) and rel[len(HARNESS) :] in ARM_MODULES)


def traced(fn: Callable[[], T]) -> tuple[T, dict[str, str]]:
    """``fn()`` and {repository-relative file: content hash} of the reaching files whose functions it called."""
    seen: set[str] = set()

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen.add(frame.f_code.co_filename)

    sys.settrace(tracer)  # type: ignore[arg-type]
    threading.settrace(tracer)  # type: ignore[arg-type]
    try:
        result = fn()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    files: dict[str, str] = {}
    root = str(ROOT) + "/"
    for name in seen:
        if name.startswith(root) and _reaches(name[len(root) :]):
            files[name[len(root) :]] = file_hash(Path(name))
    return result, dict(sorted(files.items()))


def _timing(key: str) -> bool:
    return key.startswith("perf/") or key.endswith("_latency_s")


def comparable(metrics: list[dict[str, float]], steps: int = SHORT_STEPS) -> list[dict[str, float]]:
    """The first ``steps`` steps' metrics without the timing ones (perf/*, *_latency_s), which differ run to
    run. A key only one side has is compared only where both have it (a later code may log more)."""
    return [{k: v for k, v in m.items() if not _timing(k)} for m in metrics[:steps]]


def same_steps(a: list[dict[str, float]], b: list[dict[str, float]]) -> list[str]:
    """The metric keys whose values differ at some step, on the keys both sides logged."""
    out: set[str] = set()
    for x, y in zip(comparable(a, len(a)), comparable(b, len(b)), strict=False):
        out |= {k for k in set(x) & set(y) if x[k] != y[k]}
    if len(a) != len(b):
        out.add("the number of steps")
    return sorted(out)


def short_pass(arms: list[tuple[str, Any]], store: Path) -> tuple[dict[str, ArmResult], dict[str, str]]:
    """Train each (role, ArmSpec) for SHORT_STEPS steps with a tiny evaluation, traced: (results, reach files)."""
    from benchmarks.reproduce.arms import train_arm

    def run() -> dict[str, ArmResult]:
        return {
            role: train_arm(replace(spec), store, stop_after=SHORT_STEPS, eval_spec=SHORT_EVAL)
            for role, spec in arms
        }

    return traced(run)


def write(folder: Path, row: str, files: dict[str, str], verified: str = "") -> dict[str, Any]:
    """Store the row's reach (``verified``: the commit whose arms a verifying pass matched, else '')."""
    reach = {
        "row": row,
        "git_commit": git_commit(),
        "code_revision": code_revision(),
        "lock": lock_hash(),
        "files": files,
        "verified_against": verified,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{row}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(reach, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return reach


def read(folder: Path, row: str) -> dict[str, Any] | None:
    path = folder / f"{row}.json"
    return dict(json.loads(path.read_text())) if path.is_file() else None


def staleness(folder: Path, row: str, arms: list[ArmResult]) -> dict[str, Any]:
    """{'stale', 'changed' (files), 'more' (how many not named), 'why', 'verified_against'} of a row today."""
    reach = read(folder, row)
    if reach is None and not arms:  # nothing trained (a row that cannot act here at all)
        return {"stale": False, "changed": [], "more": 0, "why": "", "verified_against": ""}
    if reach is None:
        revisions = sorted({str(a.extra.get("code_revision")) for a in arms})
        if revisions == [code_revision()]:
            return {"stale": False, "changed": [], "more": 0, "why": "", "verified_against": ""}
        return {
            "stale": True,
            "changed": [],
            "more": 0,
            "why": "the code that reached its arms was not recorded (trained before reach records); "
            f"trained at code revision {', '.join(revisions) or 'n/a'}",
            "verified_against": "",
        }
    changed = [f for f, h in reach["files"].items() if file_hash(ROOT / f) != h]
    lock_changed = reach.get("lock") != lock_hash()
    why = []
    if changed:
        why.append(f"{len(changed)} of the {len(reach['files'])} files that reached its arms changed")
    if lock_changed:
        why.append("deploy/requirements.lock changed")
    return {
        "stale": bool(changed or lock_changed),
        "changed": changed[:SHOWN_CHANGES],
        "more": max(0, len(changed) - SHOWN_CHANGES),
        "why": "; ".join(why),
        "verified_against": reach.get("verified_against", ""),
    }


def matches(short: ArmResult, stored: ArmResult) -> str:
    """'' when the short pass's first steps equal the stored arm's exactly, else what differs."""
    if short.extra.get("models") != stored.extra.get("models"):
        return f"model files differ ({short.extra.get('models')} vs {stored.extra.get('models')})"
    differs = same_steps(short.metrics[:SHORT_STEPS], stored.metrics[:SHORT_STEPS])
    return f"first {SHORT_STEPS} steps differ in {', '.join(differs[:3])}" if differs else ""
