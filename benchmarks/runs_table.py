"""The runs table's metric figures, timed on PostgreSQL (not a test; timings stay out of tests).

A project of ``--runs`` runs x ``--steps`` steps x ``--keys`` metric keys. Two ways to get each run's
last / best / smoothed (trailing 10-point mean) figure for every key, checked to agree, then timed:

1. ``computed_summaries``: the one SQL query with window functions over every point;
2. ``metric_summaries`` as the runs table and project page call it, every run finished: after the first
   call it reads the figures kept per finished run (``StoredMetricSummary``), not the points;
3. the alternative a script would write against the platform (and what a dashboard that keeps no
   summaries does): read every point of every run (``MetricPoint`` rows ordered by run, key, step) and
   compute the same figures in Python.

Runs in a throw-away database (Django's test-database machinery: ``test_<name>`` created and dropped):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rlvr .venv/bin/python benchmarks/runs_table.py
    ... benchmarks/runs_table.py --runs 30 --steps 1000 --keys 4 --repeats 5

Prints medians over ``--repeats`` and the ratios against the Python way, and writes them to
``benchmarks/results/runs_table.json`` with the code revision.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
WINDOW = 10


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def python_summaries(rows: list[tuple[int, str, int, float]]) -> dict[tuple[int, str], tuple[float, ...]]:
    """(run, key) -> (last, max, min, smooth_last, smooth_max, smooth_min) from rows ordered by run, key, step."""
    out: dict[tuple[int, str], tuple[float, ...]] = {}
    for (run_id, key), group in groupby(rows, key=lambda r: (r[0], r[1])):
        values = [r[3] for r in group]
        smooth = []
        total = 0.0
        for i, v in enumerate(values):
            total += v
            if i >= WINDOW:
                total -= values[i - WINDOW]
            smooth.append(total / min(i + 1, WINDOW))
        full = smooth[WINDOW - 1 :] if len(values) >= WINDOW else smooth[-1:]
        out[run_id, key] = (values[-1], max(values), min(values), smooth[-1], max(full), min(full))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=4, help="metric keys summarised (columns)")
    parser.add_argument("--other-keys", type=int, default=16, help="keys each run also logs, not summarised")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "runs_table.json")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    if connection.vendor != "postgresql":
        print("set DATABASE_URL=postgres://... : the benchmark is about PostgreSQL", file=sys.stderr)
        return 2
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        result = run(args)
    finally:
        teardown_databases(old_config, verbosity=0)
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    result = {"revision": revision or "unknown", **result}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from webapp.experiments.metric_summaries import computed_summaries, metric_summaries
    from webapp.experiments.models import MetricPoint, Run, RunStatus, StoredMetricSummary
    from webapp.experiments.services import experiment_create, run_launch
    from webapp.teams.services import project_create

    rng = random.Random(0)
    user = get_user_model().objects.create_user("bench", password="bench-password-123")
    project = project_create(name="bench", owner=user)
    experiment = experiment_create(project=project, actor=user, name="bench", config={})
    keys = [f"bench/key_{k}" for k in range(args.keys)]
    logged = keys + [f"other/key_{k}" for k in range(args.other_keys)]
    for _ in range(args.runs):
        run_obj = run_launch(experiment=experiment, actor=user)
        MetricPoint.objects.bulk_create(
            [
                MetricPoint(run=run_obj, step=s, key=k, value=math.sin(s / 50) + rng.gauss(0, 0.3))
                for s in range(1, args.steps + 1)
                for k in logged
            ],
            batch_size=20_000,
        )
    with connection_cursor() as cursor:
        cursor.execute("ANALYZE")
    runs = Run.objects.filter(experiment__project=project)
    runs.update(status=RunStatus.SUCCEEDED, step=args.steps)

    def figures(found: dict[int, dict[str, Any]]) -> dict[tuple[int, str], tuple[float, ...]]:
        return {
            (r, k): (s.last, s.max, s.min, s.smooth_last, s.smooth_max, s.smooth_min)
            for r, per_key in found.items()
            for k, s in per_key.items()
        }

    def by_sql() -> dict[tuple[int, str], tuple[float, ...]]:
        return figures(computed_summaries(runs=runs, keys=keys, window=WINDOW))

    def by_stored() -> dict[tuple[int, str], tuple[float, ...]]:
        return figures(metric_summaries(runs=runs, keys=keys, window=WINDOW))

    def by_python() -> dict[tuple[int, str], tuple[float, ...]]:
        rows = list(
            MetricPoint.objects.filter(run__in=runs, key__in=keys, value__isnull=False)
            .order_by("run_id", "key", "step")
            .values_list("run_id", "key", "step", "value")
        )
        return python_summaries(rows)

    StoredMetricSummary.objects.all().delete()
    start = time.perf_counter()
    stored_first = by_stored()  # computes and keeps every run's figures
    first_ms = (time.perf_counter() - start) * 1000
    sql, python, stored = by_sql(), by_python(), by_stored()
    for name, answer in (("SQL", sql), ("stored", stored), ("stored (first call)", stored_first)):
        assert answer.keys() == python.keys(), f"{name} and Python summarise different (run, key) pairs"
        for pair, values in answer.items():
            assert all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                for a, b in zip(values, python[pair], strict=True)
            ), (name, pair)
    sql_ms = median_ms(by_sql, args.repeats)
    python_ms = median_ms(by_python, args.repeats)
    stored_ms = median_ms(by_stored, args.repeats)
    return {
        "runs": args.runs, "steps": args.steps, "summarised_keys": args.keys,
        "keys_per_run": len(logged), "points_read": args.runs * args.steps * args.keys,
        "repeats": args.repeats, "sql_median_ms": round(sql_ms, 1), "python_median_ms": round(python_ms, 1),
        "python_over_sql": round(python_ms / sql_ms, 2),
        "stored_first_call_ms": round(first_ms, 1), "stored_median_ms": round(stored_ms, 1),
        "python_over_stored": round(python_ms / stored_ms, 1),
    }  # fmt: skip


def connection_cursor() -> Any:
    from django.db import connection

    return connection.cursor()


if __name__ == "__main__":
    raise SystemExit(main())
