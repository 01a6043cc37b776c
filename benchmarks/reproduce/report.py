"""From stored arms to the table: rows with paired statistics and verdicts, results.json, docs/reproduction.md
and the raw curves. Pure over the stored arms: the same store gives the same files, byte for byte."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.reproduce.arms import arm_key, load_arm, stored_path
from benchmarks.reproduce.measures import COSTS, MEASURES, ArmResult
from benchmarks.reproduce.plan import COMMAND, PROBE_SEEDS
from benchmarks.reproduce.stats import paired, paired_eval_se
from benchmarks.reproduce.verdict import NOT_APPLICABLE, describe, part_verdict, row_verdict

if TYPE_CHECKING:
    import argparse

    from benchmarks.reproduce.plan import Places, RowPlan


def applicability(plan: RowPlan, store: Path) -> str | None:
    """Why the row's method cannot act here (static, or read from the stored probe seeds), or None."""
    method = plan.method
    if method.not_applicable:
        return method.not_applicable
    if method.applicable is None:
        return None
    probe = plan.pairs[:PROBE_SEEDS]
    paths = [(stored_path(store, arm_key(m)[0]), stored_path(store, arm_key(c)[0])) for _, c, m in probe]
    if not all(a.is_file() and b.is_file() for a, b in paths):
        return None  # not probed yet: train it
    return method.applicable([load_arm(a) for a, _ in paths], [load_arm(b) for _, b in paths])


def _arms(plan: RowPlan, store: Path) -> tuple[list[ArmResult], list[ArmResult], int]:
    """(method arms, comparison arms, missing count) of the row's seeds, in seed order."""
    methods, comparisons, missing = [], [], 0
    for _, comparison, method in plan.pairs:
        paths = stored_path(store, arm_key(method)[0]), stored_path(store, arm_key(comparison)[0])
        missing += sum(not p.is_file() for p in paths)
        if all(p.is_file() for p in paths):
            methods.append(load_arm(paths[0]))
            comparisons.append(load_arm(paths[1]))
    return methods, comparisons, missing


def _figure(name: str, methods: list[ArmResult], comparisons: list[ArmResult]) -> dict[str, Any]:
    m = MEASURES[name]
    values = [m.fn(a, b) for a, b in zip(methods, comparisons, strict=True)]
    base = [m.fn(b, b) for b in comparisons]
    return {
        "measure": name,
        "method_values": values,
        "comparison_values": base,
        "paired": paired(values, base).to_json(),
    }


def build_rows(plans: list[RowPlan], store: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The rows of the table for ``plans`` from the stored arms, and {method: arms missing} for incomplete rows."""
    from benchmarks.reproduce.stats import Paired

    rows: list[dict[str, Any]] = []
    missing: dict[str, int] = {}
    for plan in plans:
        method = plan.method
        row: dict[str, Any] = {
            "method": method.name,
            "area": plan.area,
            "paper": method.paper,
            "claim": method.claim,
            "comparison": method.comparison,
            "note": method.note,
            "seeds": [s for s, _, _ in plan.pairs],
            "steps": plan.pairs[0][1].steps if plan.pairs else None,
            "overrides": method.overrides,
            "baseline_overrides": method.baseline_overrides,
            "command": f"{COMMAND} --methods {method.name}",
        }
        reason = applicability(plan, store)
        methods, comparisons, absent = _arms(plan, store)
        if reason is None and absent:
            missing[method.name] = absent
            row.update(verdict="not run", parts=[], figures=[], costs=[], arms=[])
            rows.append(row)
            continue
        if reason is not None:
            row.update(
                verdict=NOT_APPLICABLE,
                reason=reason,
                parts=[],
                costs=[],
                figures=[_figure(p.measure, methods, comparisons) for p in method.parts] if methods else [],
            )
            row["arms"] = _provenance(methods, comparisons)
            rows.append(row)
            continue
        parts = []
        for part in method.parts:
            fig = _figure(part.measure, methods, comparisons)
            stats = Paired(**{k: (float("nan") if v is None else v) for k, v in fig["paired"].items()})
            verdict = part_verdict(part.direction, stats)
            fig.update(
                text=part.text,
                direction=part.direction,
                verdict=verdict,
                verdict_text=describe(part.direction, verdict, stats, MEASURES[part.measure].fmt),
            )
            if part.measure == "final_accuracy":
                fig["eval_se"] = statistics.fmean(
                    paired_eval_se(a.evals[-1]["greedy_bits"], b.evals[-1]["greedy_bits"])
                    for a, b in zip(methods, comparisons, strict=True)
                )
            parts.append(fig)
        shown = [p.measure for p in method.parts]
        row.update(
            verdict=row_verdict([p["verdict"] for p in parts]),
            parts=parts,
            figures=[_figure(f, methods, comparisons) for f in method.figures if f not in shown],
            costs=[_figure(c, methods, comparisons) for c in COSTS],
            arms=_provenance(methods, comparisons),
        )
        rows.append(row)
    return rows, missing


def _provenance(methods: list[ArmResult], comparisons: list[ArmResult]) -> list[dict[str, Any]]:
    return [
        {
            "role": role,
            "seed": a.extra.get("seed"),
            "key": a.extra.get("key"),
            "code_revision": a.extra.get("code_revision"),
            "git_commit": a.extra.get("git_commit"),
            "models": a.extra.get("models"),
        }
        for role, arms in (("method", methods), ("comparison", comparisons))
        for a in arms
    ]


def write(places: Places, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Merge ``rows`` into results.json and rewrite the table and the curves from every row there."""
    results: dict[str, Any] = (
        json.loads(places.results.read_text()) if places.results.is_file() else {"rows": {}}
    )
    for row in rows:
        results["rows"][row["method"]] = row
    results["rows"] = dict(sorted(results["rows"].items()))
    places.results.parent.mkdir(parents=True, exist_ok=True)
    places.results.write_text(json.dumps(_finite(results), indent=1, sort_keys=True) + "\n")
    from benchmarks.reproduce.table import render

    stored = json.loads(places.results.read_text())  # render what was written (NaN is null there)
    ordered = sorted(stored["rows"].values(), key=lambda r: (r["area"], r["method"]))
    places.doc.parent.mkdir(parents=True, exist_ok=True)
    places.doc.write_text(render(ordered))
    places.curves.write_text(curves_csv(ordered, places.store))


def _finite(value: Any) -> Any:
    """JSON has no NaN: non-finite floats become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def curves_csv(rows: list[dict[str, Any]], store: Path) -> str:
    """Every stored arm's held-out curve, one line per (row, role, seed, checkpoint)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
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
    )
    for row in rows:
        for arm in row.get("arms", []):
            path = stored_path(store, arm["key"])
            if not path.is_file():
                continue
            for point in load_arm(path).evals:
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
