"""The rows to reproduce: which methods exist (``methods_<area>.py``), which the command selected, the arms of
each row, and where the store, results and table live. Read by run.py (which trains), report.py and table.py
(which write); it imports neither of them, so the modules import each other as a DAG."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.reproduce.arms import ArmSpec
from benchmarks.reproduce.baseline import BASELINE, deep_merge
from benchmarks.reproduce.evaluation import EvalSpec
from benchmarks.reproduce.measures import MEASURES
from benchmarks.reproduce.method import Method

COMMAND = ".venv/bin/python -m benchmarks.reproduce.run"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_SEEDS = list(range(8))
DEFAULT_STEPS = 60
DEFAULT_EVAL_EVERY = 20
PROBE_SEEDS = 2  # seeds trained before a method's applicability rule is read


@dataclass(frozen=True)
class Places:
    store: Path  # stored arms
    results: Path  # results.json
    doc: Path  # the table
    curves: Path  # the raw per-seed curves (CSV)

    @staticmethod
    def default() -> Places:
        return Places(
            HERE / "arms",
            HERE / "results.json",
            ROOT / "docs" / "reproduction.md",
            ROOT / "docs" / "reproduction_curves.csv",
        )

    @staticmethod
    def under(folder: Path) -> Places:
        return Places(
            folder / "arms",
            folder / "results.json",
            folder / "reproduction.md",
            folder / "reproduction_curves.csv",
        )


def discover_methods() -> dict[str, tuple[str, Method]]:
    """name -> (area, Method) from every benchmarks/reproduce/methods_<area>.py (each has METHODS)."""
    found: dict[str, tuple[str, Method]] = {}
    for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda i: i.name):
        if not info.name.startswith("methods_"):
            continue
        module = importlib.import_module(f"benchmarks.reproduce.{info.name}")
        area = info.name.removeprefix("methods_")
        for method in getattr(module, "METHODS", []):
            if method.name in found:
                raise SystemExit(
                    f"method {method.name!r} is defined in both methods_{found[method.name][0]}.py and {info.name}.py"
                )
            names = [p.measure for p in method.parts] + list(method.figures)
            if not method.parts or any(n not in MEASURES for n in names):
                raise SystemExit(
                    f"method {method.name!r} needs claim parts naming known measures; known: {', '.join(MEASURES)}"
                )
            found[method.name] = (area, method)
    return found


def select(names: str, available: dict[str, tuple[str, Method]]) -> list[tuple[str, Method]]:
    if names == "all":
        return list(available.values())
    chosen: list[tuple[str, Method]] = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name.startswith("area:"):
            area = [am for am in available.values() if am[0] == name.removeprefix("area:")]
            if not area:
                raise SystemExit(
                    f"no method in {name!r}; areas: {', '.join(sorted({a for a, _ in available.values()}))}"
                )
            chosen += area
        elif name in available:
            chosen.append(available[name])
        else:
            raise SystemExit(
                f"unknown method {name!r}; known: {', '.join(sorted(available))} (or area:<name>, all)"
            )
    return chosen


@dataclass(frozen=True)
class RowPlan:
    """The arms of one row: (seed, comparison spec, method spec) per seed."""

    area: str
    method: Method
    pairs: tuple[tuple[int, ArmSpec, ArmSpec], ...]


def plan_row(
    area: str, method: Method, seeds: Sequence[int], steps: int, eval_every: int, spec: EvalSpec, store: Path
) -> RowPlan:
    if method.not_applicable:
        return RowPlan(area, method, ())
    extra: dict[str, Any] = {}
    cost: dict[str, float] = {}
    if method.prepare is not None:  # once for every seed; stored, so a resumed run does not pay it again
        extra, cost = method.prepare(store, deep_merge(BASELINE, method.baseline_overrides))
    method_overrides = deep_merge(deep_merge(method.baseline_overrides, method.overrides), extra)
    pairs = tuple(
        (
            seed,
            ArmSpec(method.baseline_overrides, seed, steps, eval_every, spec),
            ArmSpec(method_overrides, seed, steps, eval_every, spec, prepare_cost=cost),
        )
        for seed in seeds
    )
    return RowPlan(area, method, pairs)
