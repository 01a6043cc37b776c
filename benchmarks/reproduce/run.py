"""``python -m benchmarks.reproduce.run``: the whole reproduction table, resumably.

Trains each selected method and its comparison arm for every seed on the reasoning task (benchmarks/
reproduce/baseline.py), two arms at a time by default, storing every finished arm under a key of code revision,
model hashes and config (arms.py), so an interrupted run resumes where it stopped and a finished one retrains
nothing. Then compares the arms seed by seed (stats.py, verdict.py), writes the rows to results.json and
rewrites docs/reproduction.md and the raw curves (report.py). No Django: trainer.step.loop.train with an
in-memory sink.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.reproduce.arms import ArmSpec, arm_key, run_arm, stored_path
from benchmarks.reproduce.evaluation import EVAL
from benchmarks.reproduce.plan import (
    DEFAULT_EVAL_EVERY,
    DEFAULT_SEEDS,
    DEFAULT_STEPS,
    PROBE_SEEDS,
    Places,
    discover_methods,
    plan_row,
    select,
)


def _train_one(job: tuple[ArmSpec, str]) -> tuple[str, float]:
    """Pool worker: one arm, one thread."""
    spec, store = job
    t0 = time.perf_counter()
    run_arm(spec, Path(store))
    return arm_key(spec)[0], time.perf_counter() - t0


def _init_worker() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def train_missing(specs: list[tuple[str, ArmSpec]], store: Path, jobs: int, log: Any) -> int:
    """Train every spec not yet stored (each key once), ``jobs`` at a time; returns how many were trained."""
    todo: dict[str, tuple[str, ArmSpec]] = {}
    for label, spec in specs:
        key = arm_key(spec)[0]
        if key not in todo and not stored_path(store, key).is_file():
            todo[key] = (label, spec)
    if not todo:
        return 0
    log(f"training {len(todo)} arms ({jobs} at a time); finished arms are kept in {store}")
    t0, done = time.perf_counter(), 0
    labels = {key: label for key, (label, _) in todo.items()}
    work = [(spec, str(store)) for _, spec in todo.values()]
    if jobs <= 1:
        _init_worker()
        results = map(_train_one, work)
        for key, seconds in results:
            done += 1
            log(_progress(done, len(todo), labels[key], seconds, t0))
    else:
        with multiprocessing.get_context("spawn").Pool(
            jobs, initializer=_init_worker, maxtasksperchild=8
        ) as pool:
            for key, seconds in pool.imap_unordered(_train_one, work):
                done += 1
                log(_progress(done, len(todo), labels[key], seconds, t0))
    return done


def _progress(done: int, total: int, label: str, seconds: float, t0: float) -> str:
    elapsed = time.perf_counter() - t0
    eta = elapsed / done * (total - done)
    return f"  [{done}/{total}] {label}: {seconds:.0f}s (elapsed {elapsed / 60:.1f} min, about {eta / 60:.0f} min left)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reproduce.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--methods", default="all", help="'all', or comma-separated method names / area:<area>"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=DEFAULT_SEEDS)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument(
        "--eval-every", type=int, default=DEFAULT_EVAL_EVERY, help="held-out curve point every N steps"
    )
    parser.add_argument(
        "--eval-problems",
        type=int,
        default=EVAL.greedy_problems,
        help="size of the fixed held-out set (greedy); the sampled and curve subsets scale with it",
    )
    parser.add_argument(
        "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="arms trained at a time"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="write the store, results, table and curves under this folder "
        "instead of benchmarks/reproduce/ and docs/",
    )
    parser.add_argument(
        "--no-train",
        action="store_true",
        help="train nothing: rebuild the table from stored arms "
        "and list the rows whose arms are missing at this code revision",
    )
    parser.add_argument("--list", action="store_true", help="list the discovered methods and exit")
    args = parser.parse_args(argv)
    from benchmarks.reproduce import report

    available = discover_methods()
    if args.list:
        for name, (area, m) in sorted(available.items()):
            print(
                f"{area:12s} {name:28s} {m.paper:18s} "
                + "; ".join(f"{p.measure} {p.direction}" for p in m.parts)
            )
        return 0
    if args.steps < 1 or args.steps % args.eval_every:
        raise SystemExit("--steps must be a positive multiple of --eval-every")
    if len(set(args.seeds)) != len(args.seeds) or len(args.seeds) < 2:
        raise SystemExit("--seeds needs at least 2 distinct seeds (the statistics are paired over seeds)")
    if not 20 <= args.eval_problems <= 20000:
        raise SystemExit("--eval-problems must be between 20 and 20000")
    scale = args.eval_problems / EVAL.greedy_problems
    spec = replace(
        EVAL,
        greedy_problems=args.eval_problems,
        sampled_problems=max(10, round(EVAL.sampled_problems * scale)),
        curve_problems=max(10, round(EVAL.curve_problems * scale)),
    )
    places = Places.under(args.out) if args.out else Places.default()
    _init_worker()
    log = lambda s: print(s, flush=True)  # noqa: E731
    chosen = select(args.methods, available)
    plans = [
        plan_row(area, m, args.seeds, args.steps, args.eval_every, spec, places.store) for area, m in chosen
    ]
    if not args.no_train:
        probe = [
            (f"{p.method.name} seed {s} {role}", a)
            for p in plans
            if p.method.applicable
            for s, c, m in p.pairs[:PROBE_SEEDS]
            for role, a in (("comparison", c), ("method", m))
        ]
        train_missing(probe, places.store, args.jobs, log)
        rest = [
            (f"{p.method.name} seed {s} {role}", a)
            for p in plans
            if report.applicability(p, places.store) is None
            for s, c, m in p.pairs
            for role, a in (("comparison", c), ("method", m))
        ]
        train_missing(rest, places.store, args.jobs, log)
    rows, missing = report.build_rows(plans, places.store)
    report.write(places, rows, args)
    for name, count in missing.items():
        log(f"  {name}: {count} arms not stored at this code revision: run without --no-train to train them")
    print(f"wrote {places.results}, {places.doc} and {places.curves}")
    return 1 if missing and args.no_train else 0


if __name__ == "__main__":
    sys.exit(main())
