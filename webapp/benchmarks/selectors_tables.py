"""The paper-style views of evaluations: the results table, Pass@k-vs-k curves, metrics over training.

Results table: one row per evaluated model (a base model, or one checkpoint of a run), one column per
(benchmark, metric); each cell is the newest succeeded evaluation of that model on that benchmark. A base
model is one row however many experiments start from it (they evaluate the same weights): the row is named
after the model when several share it, and lists them in ``experiments``. The best value per column is
marked for metrics where higher is better (avg@, pass@, maj@, accuracy); length and truncation counts are
shown unmarked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypedDict

from webapp.benchmarks.models import Benchmark, EvalRun, EvalStatus, TargetKind
from webapp.experiments.models import Experiment, MetricPoint

HIGHER_IS_BETTER = ("avg@", "pass@", "maj@", "acc")
PASS_AT = re.compile(r"^pass@(\d+)\b")


class Cell(TypedDict):
    value: float | None
    ci: list[float] | None
    eval_run_id: int
    best: bool


class ResultsTable(TypedDict):
    columns: list[dict[str, str]]  # {"benchmark", "metric"}
    rows: list[
        dict[str, Any]
    ]  # {"label", "kind", "step", "experiments", "cells": {"<benchmark>\t<metric>": Cell}}


def higher_is_better(metric: str) -> bool:
    return metric.lower().startswith(HIGHER_IS_BETTER)


def metric_order(metric: str) -> tuple[int, int, str]:
    """Columns as the papers print them: avg@, pass@ by k, maj@ by k, then the rest (lengths, truncation)."""
    for rank, prefix in enumerate(("avg@", "pass@", "maj@")):
        if metric.startswith(prefix):
            digits = re.match(r"\d+", metric[len(prefix) :])
            return (rank, int(digits.group()) if digits else 0, metric)
    return (3, 0, metric)


def _row_key(row: EvalRun) -> tuple[str, int | str | None, int | None, int | None]:
    if row.target_kind == TargetKind.BASE:
        return ("base", row.model_path, None, None)  # the model, not the experiment: see the module docstring
    return ("checkpoint", row.experiment_id, row.run_id, row.step)


def _base_experiments(rows: list[EvalRun]) -> dict[str, list[str]]:
    """model path -> names of the experiments whose base model it is, among the succeeded evaluations."""
    ids = {r.experiment_id for r in rows if r.target_kind == TargetKind.BASE and r.experiment_id is not None}
    names = dict(Experiment.objects.filter(pk__in=ids).values_list("pk", "name"))
    found: dict[str, list[str]] = {}
    for r in sorted(rows, key=lambda r: r.pk):
        if r.target_kind == TargetKind.BASE and r.experiment_id in names:
            shared = found.setdefault(r.model_path, [])
            if names[r.experiment_id] not in shared:
                shared.append(names[r.experiment_id])
    return found


def results_table(*, eval_runs: Iterable[EvalRun]) -> ResultsTable:
    """The table of the given evaluations (succeeded ones count; the newest per model and benchmark)."""
    succeeded = [r for r in eval_runs if r.status == EvalStatus.SUCCEEDED]
    newest: dict[tuple[Any, ...], EvalRun] = {}
    for row in sorted(succeeded, key=lambda r: (r.finished_at is None, r.finished_at, r.pk)):
        newest[(_row_key(row), row.benchmark_id)] = row  # later (newer) ones win
    shared = _base_experiments(succeeded)
    columns: dict[tuple[str, str], None] = {}
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for (key, _), row in sorted(newest.items(), key=lambda kv: (kv[1].benchmark.name, kv[0][0][0] != "base")):
        experiments = shared.get(row.model_path, []) if row.target_kind == TargetKind.BASE else []
        label = f"{row.model_path} (base)" if len(experiments) > 1 else row.label
        out = rows.setdefault(
            key,
            {
                "label": label,
                "kind": row.target_kind,
                "step": row.step,
                "cells": {},
                "experiments": experiments,
            },
        )
        for metric, value in row.metrics.items():
            columns[(row.benchmark.name, metric)] = None
            ci = row.ci.get(metric)
            out["cells"][f"{row.benchmark.name}\t{metric}"] = Cell(
                value=value, ci=list(ci) if ci else None, eval_run_id=row.pk, best=False
            )
    ordered_rows = sorted(rows.values(), key=lambda r: (r["kind"] != "base", r["label"], r["step"] or 0))
    for benchmark, metric in columns:
        if not higher_is_better(metric):
            continue
        cells = [r["cells"].get(f"{benchmark}\t{metric}") for r in ordered_rows]
        values = [c["value"] for c in cells if c and c["value"] is not None]
        if values:
            top = max(values)
            for c in cells:
                if c and c["value"] == top:
                    c["best"] = True
    benchmarks = list(dict.fromkeys(b for b, _ in columns))
    ordered = sorted(columns, key=lambda c: (benchmarks.index(c[0]), metric_order(c[1])))
    return ResultsTable(
        columns=[{"benchmark": b, "metric": m} for b, m in ordered],
        rows=ordered_rows,
    )


def pass_at_k_curves(*, eval_runs: Iterable[EvalRun]) -> list[dict[str, Any]]:
    """One curve per succeeded evaluation: k on x, pass@k on y (from metrics named ``pass@k (n=N)``)."""
    curves = []
    for row in eval_runs:
        if row.status != EvalStatus.SUCCEEDED:
            continue
        points = sorted(
            (int(m.group(1)), float(v)) for name, v in row.metrics.items()
            if (m := PASS_AT.match(name)) and v is not None
        )  # fmt: skip
        if points:
            curves.append(
                {
                    "label": row.label,
                    "eval_run_id": row.pk,
                    "k": [k for k, _ in points],
                    "value": [v for _, v in points],
                }
            )
    return curves


def metrics_over_steps(*, benchmark: Benchmark, eval_runs: Iterable[EvalRun]) -> list[dict[str, Any]]:
    """Per run and metric: the checkpoints' evaluations on x = training step (the experiment's base model
    at step 0), plus what training itself logged as ``eval/<benchmark>/<metric>``."""
    series: dict[tuple[str, str], dict[int, float]] = {}
    done = [r for r in eval_runs if r.status == EvalStatus.SUCCEEDED]
    base_by_experiment = {
        r.experiment_id: r for r in sorted(done, key=lambda r: r.pk) if r.target_kind == TargetKind.BASE
    }
    run_ids = set()
    for row in done:
        if row.target_kind != TargetKind.CHECKPOINT or row.run_id is None:
            continue
        run_ids.add(row.run_id)
        for metric, value in row.metrics.items():
            if value is None or not higher_is_better(metric):
                continue
            points = series.setdefault((f"run #{row.run_id}", metric), {})
            points[row.step or 0] = value
            base = base_by_experiment.get(row.experiment_id)
            if base is not None and base.metrics.get(metric) is not None:
                points.setdefault(0, base.metrics[metric])
    prefix = f"eval/{benchmark.name}/"
    logged = MetricPoint.objects.filter(
        run__experiment__project_id=benchmark.project_id, key__startswith=prefix
    )
    for point in logged.order_by("run_id", "step").values("run_id", "key", "step", "value"):
        if point["value"] is not None:
            series.setdefault((f"run #{point['run_id']} (training)", point["key"][len(prefix) :]), {})[
                point["step"]
            ] = point["value"]
    return [
        {"name": name, "metric": metric, "step": sorted(points), "value": [points[s] for s in sorted(points)]}
        for (name, metric), points in sorted(series.items())
    ]
