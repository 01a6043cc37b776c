"""From stored arms to the table: rows with paired statistics, results.json, docs/reproduction.md and the raw
curves. Pure over the stored arms, the reach records and today's files: the same inputs give the same files,
byte for byte (no clock, no absolute path, sorted keys, fixed float formats). Imports no torch."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.reproduce import reach
from benchmarks.reproduce.measures import COSTS, MEASURES, ArmResult
from benchmarks.reproduce.plan import COMMAND, PROBE_SEEDS
from benchmarks.reproduce.stats import Paired, paired, paired_eval_se, tost
from benchmarks.reproduce.store import ArmCache, arm_key
from benchmarks.reproduce.verdict import NOT_APPLICABLE, NOT_RUN, judge

if TYPE_CHECKING:
    from benchmarks.reproduce.plan import ComparisonPlan, Places, RowPlan

FAMILY_MEASURES = ("final_accuracy", "final_sampled_accuracy")


def _stored(comp: ComparisonPlan, cache: ArmCache) -> list[tuple[int, ArmResult, ArmResult]]:
    """(seed, subject arm, comparison arm) of the comparison's seeds whose two arms are both stored."""
    out = []
    for seed, other, subject in comp.pairs:
        a, b = cache.get(arm_key(subject)), cache.get(arm_key(other))
        if a is not None and b is not None:
            out.append((seed, a, b))
    return out


def applicability(plan: RowPlan, cache: ArmCache, probe_only: bool = False) -> str | None:
    """Why the row's method cannot act here (static, or measured on the stored arms: the probe seeds while
    training, every stored seed in the table), or None."""
    method = plan.method
    if method.not_applicable:
        return method.not_applicable
    if method.applicable is None or not plan.comparisons:
        return None
    stored = _stored(plan.comparisons[0], cache)
    probe = [s for s, _, _ in plan.pairs[:PROBE_SEEDS]]
    if not all(s in {x for x, _, _ in stored} for s in probe):
        return None  # not probed yet: train it
    if probe_only:
        stored = [x for x in stored if x[0] in probe]
    return method.applicable([a for _, a, _ in stored], [b for _, _, b in stored])


def missing_arms(plan: RowPlan, cache: ArmCache) -> list[dict[str, Any]]:
    """Every arm of the row that is not stored, named by (row, role, seed, key)."""
    return [
        {"row": plan.method.name, "role": role, "seed": seed, "key": arm_key(spec)}
        for role, seed, spec in plan.arms()
        if cache.get(arm_key(spec)) is None
    ]


def figure(name: str, pairs: list[tuple[int, ArmResult, ArmResult]]) -> dict[str, Any]:
    m = MEASURES[name]
    values = [m.fn(a, b) for _, a, b in pairs]
    base = [m.fn(b, b) for _, _, b in pairs]
    return {
        "measure": name,
        "method_values": values,
        "comparison_values": base,
        "paired": paired(values, base).to_json(),
    }


def _parts(comp: ComparisonPlan, pairs: list[tuple[int, ArmResult, ArmResult]]) -> list[dict[str, Any]]:
    parts = []
    for part in comp.parts:
        fig = figure(part.measure, pairs)
        margin = MEASURES[part.measure].margin
        fig.update(text=part.text, direction=part.direction, kind=part.kind, margin=margin or None)
        if part.direction == "same" and part.kind == "claim":
            stats = Paired.from_json(fig["paired"])
            fig["p_equivalence"] = tost(stats, margin)
        if part.measure == "final_accuracy":
            fig["eval_se"] = statistics.fmean(
                paired_eval_se(str(a.evals[-1]["greedy_bits"]), str(b.evals[-1]["greedy_bits"]))
                for _, a, b in pairs
            )
        parts.append(fig)
    return parts


def _head(plan: RowPlan) -> dict[str, Any]:
    method = plan.method
    return {
        "method": method.name,
        "area": plan.area,
        "paper": method.paper,
        "cites": method.cites,
        "claim": method.claim,
        "comparison": method.comparison,
        "note": method.note,
        "family": method.family,
        "seeds": [s for s, _, _ in plan.pairs],
        "steps": plan.pairs[0][1].steps if plan.pairs else None,
        "overrides": method.overrides,
        "baseline_overrides": method.baseline_overrides,
        "command": f"{COMMAND} --methods {method.name}",
    }


def build_row(plan: RowPlan, cache: ArmCache, reach_dir: Path) -> dict[str, Any]:
    """One row from the stored arms (statistics raw; ``judge`` adds the adjusted verdicts)."""
    row = _head(plan)
    reason = applicability(plan, cache)
    missing = missing_arms(plan, cache) if reason is None else []
    own = _stored(plan.comparisons[0], cache) if plan.comparisons else []
    if reason is not None:
        row.update(verdict=NOT_APPLICABLE, reason=reason, comparisons=[], costs=[], missing=[])
        row["figures"] = [figure(p.measure, own) for p in plan.method.parts] if own else []
        row["seeds_read"] = [s for s, _, _ in own]
        row["arms"] = _arm_list(plan, cache)
        row["staleness"] = reach.staleness(
            reach_dir, plan.method.name, [a for _, a, b in own] + [b for *_, b in own]
        )
        return row
    row["missing"] = missing
    if any(m["role"] in ("method", "comparison") for m in missing):
        row.update(verdict=NOT_RUN, comparisons=[], figures=[], costs=[], arms=[])
        return row
    comparisons = []
    for comp in plan.comparisons:
        pairs = _stored(comp, cache)
        absent = [m for m in missing if m["role"] in (comp.role, comp.subject_role)]
        entry: dict[str, Any] = {
            "role": comp.role,
            "label": comp.label,
            "subject_role": comp.subject_role,
            "missing": absent,
            "parts": [] if absent else _parts(comp, pairs),
        }
        comparisons.append(entry)
    shown = [p.measure for p in plan.method.parts]
    arms = [a for _, a, _ in own] + [b for _, _, b in own]
    row.update(
        verdict="computed",
        comparisons=comparisons,
        figures=[figure(f, own) for f in plan.method.figures if f not in shown],
        costs=[figure(c, own) for c in COSTS],
        arms=_arm_list(plan, cache),
        staleness=reach.staleness(reach_dir, plan.method.name, arms),
    )
    return row


def _arm_list(plan: RowPlan, cache: ArmCache) -> list[dict[str, Any]]:
    out = []
    for role, seed, spec in plan.arms():
        arm = cache.get(arm_key(spec))
        if arm is None:
            continue
        out.append(
            {
                "role": role,
                "seed": seed,
                "key": arm_key(spec),
                "code_revision": arm.extra.get("code_revision"),
                "git_commit": arm.extra.get("git_commit"),
                "models": arm.extra.get("models"),
            }
        )
    return out


def build_rows(
    plans: list[RowPlan], cache: ArmCache, reach_dir: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows for ``plans`` and every missing arm (row, role, seed, key) of a row that can act."""
    rows = [build_row(plan, cache, reach_dir) for plan in plans]
    return rows, [m for row in rows for m in row.get("missing", [])]


def families(rows: list[dict[str, Any]], cache: ArmCache) -> dict[str, list[dict[str, Any]]]:
    """Rows that are one effect seen several ways (``Method.family``): pairwise paired differences of their method
    arms on the seeds both have, descriptive (not claims; not in the Holm family)."""
    out: dict[str, list[dict[str, Any]]] = {}
    by_family: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("family") and row.get("arms"):
            by_family.setdefault(row["family"], []).append(row)
    for name, members in sorted(by_family.items()):
        method_arms = {
            r["method"]: {a["seed"]: a["key"] for a in r["arms"] if a["role"] == "method"} for r in members
        }
        entries = []
        for a, b in combinations(sorted(method_arms), 2):
            seeds = sorted(set(method_arms[a]) & set(method_arms[b]))
            pairs = []
            for s in seeds:
                x, y = cache.get(method_arms[a][s]), cache.get(method_arms[b][s])
                if x is not None and y is not None:
                    pairs.append((s, x, y))
            for measure in FAMILY_MEASURES:
                entries.append({"a": a, "b": b, "seeds": [s for s, _, _ in pairs], **figure(measure, pairs)})
        out[name] = entries
    return out


def write(places: Places, rows: list[dict[str, Any]], complete: bool) -> None:
    """Rows into results.json (replacing every row when ``complete``, else merged by name), then Holm across
    the table, the families, and the table and the curves from every row there."""
    old: dict[str, Any] = (
        json.loads(places.results.read_text()) if places.results.is_file() and not complete else {"rows": {}}
    )
    merged = dict(old.get("rows", {}))
    for row in rows:
        merged[row["method"]] = row
    ordered = [merged[k] for k in sorted(merged)]
    for row in ordered:  # judged afresh across the whole table
        if row["verdict"] not in (NOT_APPLICABLE, NOT_RUN):
            row["verdict"] = "computed"
    judge(ordered, {name: m.fmt for name, m in MEASURES.items()})
    cache = ArmCache(places.store)
    results = {"rows": {r["method"]: r for r in ordered}, "families": families(ordered, cache)}
    places.results.parent.mkdir(parents=True, exist_ok=True)
    places.results.write_text(json.dumps(_finite(results), indent=1, sort_keys=True) + "\n")
    from benchmarks.reproduce.table import render

    stored = json.loads(places.results.read_text())  # render what was written (NaN is null there)
    table_rows = sorted(stored["rows"].values(), key=lambda r: (r["area"], r["method"]))
    places.doc.parent.mkdir(parents=True, exist_ok=True)
    places.doc.write_text(render(table_rows, stored["families"]))
    places.curves.write_text(curves_csv(table_rows, cache))


def _finite(value: Any) -> Any:
    """JSON has no NaN: non-finite floats become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


CURVE_COLUMNS = [
    "method",
    "role",
    "seed",
    "arm_key",
    "step",
    "cumulative_rollouts",
    "cumulative_tokens",
    "greedy_accuracy",
    "greedy_problems",
    "bare_share",
    "sampled_accuracy",
    "sampled_problems",
]


def curves_csv(rows: list[dict[str, Any]], cache: ArmCache) -> str:
    """Every stored arm's held-out curve, one line per (row, role, seed, checkpoint)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CURVE_COLUMNS)
    for row in rows:
        for arm in row.get("arms", []):
            result = cache.get(arm["key"])
            if result is None:
                continue
            for point in result.evals:
                writer.writerow(
                    [
                        row["method"],
                        arm["role"],
                        arm["seed"],
                        arm["key"],
                        point["step"],
                        f"{point['cumulative_rollouts']:.0f}",
                        f"{point.get('cumulative_tokens', 0):.0f}",
                        f"{point['greedy']:.4f}",
                        point["greedy_n"],
                        f"{point['bare']:.4f}",
                        f"{point['sampled']:.4f}" if "sampled" in point else "",
                        point.get("sampled_n", ""),
                    ]
                )
    return out.getvalue()
