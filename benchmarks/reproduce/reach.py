"""The code that reaches a row, and whether it has changed since the row's arms were trained (staleness).

Keys say what was trained, not with which code (store.py), so a change to trainer/ keeps every stored arm; the
table must then say which rows that change may have moved. When a row's arms are trained, ``record`` runs a
SHORT traced pass (the first steps of seed 0 of each of the row's arms, a few held-out problems) under a
function-level tracer (``sys.settrace`` noting each called frame's file and returning None, so lines are not
traced) and stores the row's reach: every file under trainer/ and every arm-level harness module that executed,
with its content hash then, and the code units of each that ran (functions, class bodies, the module body; by
qualified name, with a hash of each one's bytecode, constants and names, not its line numbers), plus the lock
file's hash (``reach/<row>.json``). A row is stale when the lock file differs today, or one of those files does and
a unit of it that ran no longer compiles to what ran (a comment, or a function the row never called, changes
nothing); a record without units (written before them) is stale on any change to the file. A row trained before
reach records existed is stale when its arms' code revision differs from today's. ``--verify-stale`` re-runs that
short pass and, when its metrics equal the stored arms' first steps exactly, stamps the reach as current
("verified"): the change did not reach the numbers. ``--refine-reach`` re-traces rows that are current under a
record without units and adds them, so that later changes are judged by unit.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import CodeType, FrameType
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


def _walk(code: CodeType, at_import: bool = True) -> Iterator[tuple[CodeType, bool]]:
    """Every code object under ``code`` with whether it runs when the module is imported: the module body, class
    bodies (no fresh locals) and the comprehensions and lambdas written directly in them."""
    yield code, at_import
    body = at_import and not code.co_flags & inspect.CO_NEWLOCALS
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _walk(
                const, body and (const.co_name.startswith("<") or not const.co_flags & inspect.CO_NEWLOCALS)
            )


def _const(value: Any) -> str:
    """A constant as stable text: nested code by name, sets sorted (their order follows string hashing)."""
    if isinstance(value, CodeType):
        return f"<code {value.co_qualname}>"
    if isinstance(value, tuple):
        return "(" + ",".join(_const(v) for v in value) + ")"
    if isinstance(value, frozenset):
        return "frozenset(" + ",".join(sorted(_const(v) for v in value)) + ")"
    return repr(value)


def _unit_hash(code: CodeType) -> str:
    """What a code unit does, without where it sits: bytecode, constants, names, signature and flags."""
    digest = hashlib.sha256(code.co_code + b"\0" + code.co_exceptiontable)
    for part in (
        [_const(c) for c in code.co_consts],
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags),
    ):
        digest.update(repr(part).encode() + b"\0")
    return digest.hexdigest()[:16]


def code_units(path: Path) -> tuple[dict[str, str], dict[tuple[str, int], str], set[str]]:
    """({unit: hash}, {(qualified name, first line): unit}, the units that run at import) of a Python file as it
    is now; empty when it is absent or does not compile. A unit is a qualified name, '#n' after it for its n-th
    repeat in the file."""
    try:
        module = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return {}, {}, set()
    hashes: dict[str, str] = {}
    at: dict[tuple[str, int], str] = {}
    on_import: set[str] = set()
    for code, at_import in _walk(module):
        name, n = code.co_qualname, 0
        while (unit := name if n == 0 else f"{name}#{n}") in hashes:
            n += 1
        hashes[unit] = _unit_hash(code)
        at[(code.co_qualname, code.co_firstlineno)] = unit
        if at_import:
            on_import.add(unit)
    return hashes, at, on_import


def units_hash(hashes: dict[str, str], units: list[str]) -> str | None:
    """One hash over the named units' hashes; None when one of them is no longer there."""
    if any(u not in hashes for u in units):
        return None
    return hashlib.sha256("\n".join(f"{u}={hashes[u]}" for u in sorted(units)).encode()).hexdigest()[:16]


def traced(fn: Callable[[], T]) -> tuple[T, dict[str, str], dict[str, dict[str, Any]]]:
    """``fn()``, {repository-relative file: content hash} of the reaching files whose code it ran, and
    {file: {'units': the code units of it that ran, 'hash': units_hash of them}}."""
    seen: set[CodeType] = set()

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            seen.add(frame.f_code)

    sys.settrace(tracer)  # type: ignore[arg-type]
    threading.settrace(tracer)  # type: ignore[arg-type]
    try:
        result = fn()
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    ran: dict[str, set[tuple[str, int]]] = {}
    root = str(ROOT) + "/"
    for code in seen:
        name = code.co_filename
        if name.startswith(root) and _reaches(name[len(root) :]):
            ran.setdefault(name[len(root) :], set()).add((code.co_qualname, code.co_firstlineno))
    # A module imported before the trace (by an earlier row's pass in this process) ran its body then: its
    # import-time units count as run, whether or not the trace called into it.
    for module in list(sys.modules.values()):
        name = str(getattr(module, "__file__", None) or "")
        if name.startswith(root) and _reaches(name[len(root) :]):
            ran.setdefault(name[len(root) :], set())
    files: dict[str, str] = {}
    units: dict[str, dict[str, Any]] = {}
    for rel in sorted(ran):
        files[rel] = file_hash(ROOT / rel)
        hashes, at, on_import = code_units(ROOT / rel)
        names = {at[u] for u in ran[rel] if u in at}
        # units only when every unit that ran is found in the file as it is; else the file is judged whole
        if hashes and len(names) == len(ran[rel]):
            names = sorted(names | on_import)
            units[rel] = {"units": names, "hash": units_hash(hashes, names)}
    return result, files, units


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


def short_pass(
    arms: list[tuple[str, Any]], store: Path
) -> tuple[dict[str, ArmResult], dict[str, str], dict[str, dict[str, Any]]]:
    """Train each (role, ArmSpec) for SHORT_STEPS steps with a tiny evaluation, traced: (results, reach files,
    their units that ran)."""
    from benchmarks.reproduce.arms import train_arm

    def run() -> dict[str, ArmResult]:
        return {
            role: train_arm(replace(spec), store, stop_after=SHORT_STEPS, eval_spec=SHORT_EVAL)
            for role, spec in arms
        }

    return traced(run)


def write(
    folder: Path, row: str, files: dict[str, str], units: dict[str, dict[str, Any]], verified: str = ""
) -> dict[str, Any]:
    """Store the row's reach (``verified``: the commit whose arms a verifying pass matched, else '')."""
    reach = {
        "row": row,
        "git_commit": git_commit(),
        "code_revision": code_revision(),
        "lock": lock_hash(),
        "files": files,
        "units": units,
        "verified_against": verified,
    }
    return _store(folder, row, reach)


def refine(folder: Path, row: str, files: dict[str, str], units: dict[str, dict[str, Any]]) -> int:
    """Add the units of a fresh trace to a current record without them, keeping what it says (commit, revision,
    verification); only for files whose content is still the recorded one. The number of files given units."""
    reach = read(folder, row)
    if reach is None:
        raise ValueError(
            f"{row} has no reach record to refine: train it (its reach is then recorded with units)"
        )
    kept = {f: u for f, u in units.items() if reach["files"].get(f) == files.get(f) == file_hash(ROOT / f)}
    reach["units"] = {**reach.get("units", {}), **kept}
    reach["units_recorded_at"] = git_commit()
    _store(folder, row, reach)
    return len(kept)


def _store(folder: Path, row: str, reach: dict[str, Any]) -> dict[str, Any]:
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
    units = reach.get("units", {})
    changed = [
        f for f, h in reach["files"].items() if file_hash(ROOT / f) != h and not _same_units(f, units.get(f))
    ]
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


def _same_units(rel: str, recorded: dict[str, Any] | None) -> bool:
    """The units of ``rel`` that ran still compile to what ran (False without a record of them)."""
    if not recorded:
        return False
    hashes, _, _ = code_units(ROOT / rel)
    return units_hash(hashes, list(recorded["units"])) == recorded["hash"]


def matches(short: ArmResult, stored: ArmResult) -> str:
    """'' when the short pass's first steps equal the stored arm's exactly, else what differs."""
    if short.extra.get("models") != stored.extra.get("models"):
        return f"model files differ ({short.extra.get('models')} vs {stored.extra.get('models')})"
    differs = same_steps(short.metrics[:SHORT_STEPS], stored.metrics[:SHORT_STEPS])
    return f"first {SHORT_STEPS} steps differ in {', '.join(differs[:3])}" if differs else ""
