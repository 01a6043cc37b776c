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

from benchmarks.reproduce.baseline import deep_merge
from benchmarks.reproduce.evaluation import EvalSpec
from benchmarks.reproduce.measures import MEASURES
from benchmarks.reproduce.method import ClaimPart, Method
from benchmarks.reproduce.store import ArmSpec, PrepareSpec

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
    reach: Path  # per row: the code that reached its arms (reach.py)

    @staticmethod
    def default() -> Places:
        return Places(
            HERE / "arms",
            HERE / "results.json",
            ROOT / "docs" / "reproduction.md",
            ROOT / "docs" / "reproduction_curves.csv",
            HERE / "reach",
        )

    @staticmethod
    def under(folder: Path) -> Places:
        return Places(
            folder / "arms",
            folder / "results.json",
            folder / "reproduction.md",
            folder / "reproduction_curves.csv",
            folder / "reach",
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
            if not method.cites:
                raise SystemExit(
                    f"method {method.name!r} needs `cites`: the paper or method by name, as the table shows it"
                )
            names += [p.measure for c in method.comparisons for p in c.parts]
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
class ComparisonPlan:
    """One comparison of a row: the ``subject_role`` arm against the ``role`` arm, seed by seed."""

    role: str  # 'comparison' for the row's own comparison arm, else the extra comparison's role
    label: str
    subject_role: str
    parts: tuple[ClaimPart, ...]
    pairs: tuple[tuple[int, ArmSpec, ArmSpec], ...]  # (seed, this comparison's arm, the subject arm)


@dataclass(frozen=True)
class RowPlan:
    """The arms of one row: its own comparison first, then the paper's other comparisons."""

    area: str
    method: Method
    comparisons: tuple[ComparisonPlan, ...]

    @property
    def pairs(self) -> tuple[tuple[int, ArmSpec, ArmSpec], ...]:
        """(seed, comparison spec, method spec) of the row's own comparison."""
        return self.comparisons[0].pairs if self.comparisons else ()

    def arms(self) -> list[tuple[str, int, ArmSpec]]:
        """Every (role, seed, spec) the row needs, each once, method and comparison first."""
        seen: dict[tuple[str, int], ArmSpec] = {}
        for comp in self.comparisons:
            for seed, other, subject in comp.pairs:
                seen.setdefault((comp.subject_role, seed), subject)
                seen.setdefault((comp.role, seed), other)
        return [(role, seed, spec) for (role, seed), spec in seen.items()]


def plan_row(
    area: str, method: Method, seeds: Sequence[int], steps: int, eval_every: int, spec: EvalSpec
) -> RowPlan:
    """The row's arms. Pure: runs no offline pass and builds no model (the pass's spec is keyed instead)."""
    if method.not_applicable:
        return RowPlan(area, method, ())

    def arm(overrides: dict[str, Any], seed: int, prepare: PrepareSpec | None = None) -> ArmSpec:
        return ArmSpec(overrides, seed, steps, eval_every, spec, prepare)

    method_overrides = deep_merge(method.baseline_overrides, method.overrides)
    own = ComparisonPlan(
        "comparison",
        method.comparison,
        "method",
        method.parts,
        tuple(
            (s, arm(method.baseline_overrides, s), arm(method_overrides, s, method.prepare)) for s in seeds
        ),
    )
    extra = []
    for c in method.comparisons:
        pairs = tuple(
            (
                s,
                arm(c.arm, s),
                arm(method_overrides, s, method.prepare) if c.subject is None else arm(c.subject, s),
            )
            for s in seeds
        )
        extra.append(ComparisonPlan(c.role, c.label, c.subject_role, c.parts, pairs))
    return RowPlan(area, method, (own, *extra))


def plan_all(
    selected: list[tuple[str, Method]], seeds: Sequence[int], steps: int, eval_every: int, spec: EvalSpec
) -> list[RowPlan]:
    return [plan_row(area, m, seeds, steps, eval_every, spec) for area, m in selected]
