"""``python -m benchmarks.reproduce.run``: the whole reproduction table, resumably.

Trains each selected method and the arms of the comparisons its paper makes, for every seed, on the reasoning
task (benchmarks/reproduce/baseline.py), two arms at a time by default, storing every finished arm under a key of
what was trained (store.py), so an interrupted run resumes where it stopped and a finished one retrains nothing.
Then compares the arms seed by seed (stats.py, verdict.py), writes the rows to results.json and rewrites
docs/reproduction.md and the raw curves (report.py). ``--no-train`` does only the second half, from the stored
arms, importing no torch. No Django: trainer.step.loop.train with an in-memory sink.
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

from benchmarks.reproduce.evaluation import EVAL, EvalSpec
from benchmarks.reproduce.plan import (
    DEFAULT_EVAL_EVERY,
    DEFAULT_SEEDS,
    DEFAULT_STEPS,
    PROBE_SEEDS,
    Places,
    RowPlan,
    discover_methods,
    plan_all,
    select,
)
from benchmarks.reproduce.store import ArmCache, ArmSpec, arm_key, stored_path


def _train_one(job: tuple[ArmSpec, str, bool]) -> tuple[str, float]:
    """Pool worker: one arm, one thread (``replace``: train it even when stored, replacing it)."""
    from benchmarks.reproduce.arms import run_arm

    spec, store, replace_stored = job
    t0 = time.perf_counter()
    run_arm(spec, Path(store), use_store=not replace_stored)
    return arm_key(spec), time.perf_counter() - t0


def _init_worker() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def train_missing(
    specs: list[tuple[str, ArmSpec]], store: Path, jobs: int, log: Any, replace_stored: bool = False
) -> int:
    """Train every spec not yet stored (or every spec, ``replace_stored``), each key once, ``jobs`` at a time."""
    todo: dict[str, tuple[str, ArmSpec]] = {}
    for label, spec in specs:
        key = arm_key(spec)
        if key not in todo and (replace_stored or not stored_path(store, key).is_file()):
            todo[key] = (label, spec)
    if not todo:
        return 0
    log(f"training {len(todo)} arms ({jobs} at a time); finished arms are kept in {store}")
    t0, done = time.perf_counter(), 0
    labels = {key: label for key, (label, _) in todo.items()}
    work = [(spec, str(store), replace_stored) for _, spec in todo.values()]
    if jobs <= 1:
        _init_worker()
        for key, seconds in map(_train_one, work):
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


def _labelled(plan: RowPlan, probe_only: bool = False) -> list[tuple[str, ArmSpec]]:
    probe = {s for s, _, _ in plan.pairs[:PROBE_SEEDS]}
    return [
        (f"{plan.method.name} seed {seed} {role}", spec)
        for role, seed, spec in plan.arms()
        if not probe_only or seed in probe
    ]


def _train(plans: list[RowPlan], places: Places, args: argparse.Namespace, log: Any) -> None:
    """Train what is missing (probe seeds first), then record the reach of every row trained at today's code."""
    from benchmarks.reproduce import report, retrain

    _init_worker()
    probe = [x for p in plans if p.method.applicable for x in _labelled(p, probe_only=True)]
    train_missing(probe, places.store, args.jobs, log)
    acting = [p for p in plans if report.applicability(p, ArmCache(places.store), probe_only=True) is None]
    train_missing([x for p in acting for x in _labelled(p)], places.store, args.jobs, log)
    held: set[str] = set()
    if args.retrain_stale:
        cache = ArmCache(places.store)
        held = _held_by_current_rows(places, args)
        for plan in plans:
            if _stale(plan, cache, places):
                probe_only = plan not in acting  # a row that cannot act: only its probe seeds were trained
                todo = retrain.stale_arms(plan, cache, probe_only, held)
                train_missing(todo, places.store, args.jobs, log, replace_stored=True)
    cache = ArmCache(places.store)
    for plan in plans:
        probe_only = plan not in acting
        current = retrain.all_current(plan, cache, probe_only, held)
        if plan.comparisons and current and _needs_reach(plan, places):
            retrain.record_reach(plan, places.store, places.reach, log)


def _held_by_current_rows(places: Places, args: argparse.Namespace) -> set[str]:
    """Keys of the arms that a current row (its reach recorded and unchanged) also holds: the code that trained
    them is today's in every unit that ran, so a stale row sharing them (a plain-GRPO comparison, say) keeps them."""
    from benchmarks.reproduce import reach

    cache = ArmCache(places.store)
    everyone = plan_all(
        select("all", discover_methods()), args.seeds, args.steps, args.eval_every, _eval_spec(args)
    )
    held: set[str] = set()
    for plan in everyone:
        if reach.read(places.reach, plan.method.name) is not None and not _stale(plan, cache, places):
            held |= {arm_key(spec) for _, _, spec in plan.arms()}
    return held


def _stale(plan: RowPlan, cache: ArmCache, places: Places) -> bool:
    from benchmarks.reproduce import report

    return bool((report.build_row(plan, cache, places.reach).get("staleness") or {}).get("stale"))


def _needs_reach(plan: RowPlan, places: Places) -> bool:
    from benchmarks.reproduce import reach

    st = reach.staleness(places.reach, plan.method.name, [])
    return reach.read(places.reach, plan.method.name) is None or bool(st["stale"])


def _verify(plans: list[RowPlan], places: Places, log: Any) -> None:
    from benchmarks.reproduce import retrain

    _init_worker()
    cache = ArmCache(places.store)
    for plan in plans:
        if _stale(plan, cache, places):
            retrain.verify_stale(plan, places.store, places.reach, log)


def _refine(plans: list[RowPlan], places: Places, log: Any) -> None:
    from benchmarks.reproduce import reach, retrain

    _init_worker()
    cache = ArmCache(places.store)
    for plan in plans:
        record = reach.read(places.reach, plan.method.name)
        if record is None or record.get("units") or _stale(plan, cache, places):
            continue
        retrain.refine_reach(plan, places.store, places.reach, log)


def _parser() -> argparse.ArgumentParser:
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
        help="use the store, reach records, results, table and curves under this folder "
        "instead of benchmarks/reproduce/ and docs/",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--no-train",
        action="store_true",
        help="train and build nothing: rebuild the table from the stored arms; a missing arm is named and "
        "nothing is written (unless --allow-missing)",
    )
    mode.add_argument(
        "--retrain-stale",
        action="store_true",
        help="retrain the stale rows' arms at the current code, replacing them (resumable)",
    )
    mode.add_argument(
        "--verify-stale",
        action="store_true",
        help="re-run the first steps of seed 0 of each stale row's arms; a row whose numbers match exactly is "
        "stamped current",
    )
    mode.add_argument(
        "--refine-reach",
        action="store_true",
        help="re-trace the short pass of each current row whose reach record names files only and add the code "
        "units that ran, so that later edits to code a row never ran leave it current",
    )
    mode.add_argument(
        "--retrain-at-commit", metavar="KEY", help="train one stored arm again at its recorded commit"
    )
    mode.add_argument(
        "--train-fixture", action="store_true", help="train the short fixture arm (at a clean commit)"
    )
    mode.add_argument("--list", action="store_true", help="list the discovered methods and exit")
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="with --no-train: write the table even when arms are missing (their rows and comparisons read 'not run')",
    )
    return parser


def _eval_spec(args: argparse.Namespace) -> EvalSpec:
    scale = args.eval_problems / EVAL.greedy_problems
    return replace(
        EVAL,
        greedy_problems=args.eval_problems,
        sampled_problems=max(10, round(EVAL.sampled_problems * scale)),
        curve_problems=max(10, round(EVAL.curve_problems * scale)),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = lambda s: print(s, flush=True)  # noqa: E731
    available = discover_methods()
    if args.list:
        for name, (area, m) in sorted(available.items()):
            parts = [p for c in ((None, m.parts), *((c.role, c.parts) for c in m.comparisons)) for p in c[1]]
            print(
                f"{area:12s} {name:28s} {m.paper:18s} "
                + "; ".join(f"{p.measure} {p.direction}" for p in parts)
            )
        return 0
    if args.steps < 1 or args.steps % args.eval_every:
        raise SystemExit("--steps must be a positive multiple of --eval-every")
    if len(set(args.seeds)) != len(args.seeds) or len(args.seeds) < 2:
        raise SystemExit("--seeds needs at least 2 distinct seeds (the statistics are paired over seeds)")
    if not 20 <= args.eval_problems <= 20000:
        raise SystemExit("--eval-problems must be between 20 and 20000")
    if not 1 <= args.jobs <= 64:
        raise SystemExit("--jobs must be between 1 and 64")
    if args.allow_missing and not args.no_train:
        raise SystemExit("--allow-missing goes with --no-train (training fills what is missing)")
    places = Places.under(args.out) if args.out else Places.default()
    if args.train_fixture or args.retrain_at_commit:
        from benchmarks.reproduce import retrain

        if args.train_fixture:
            retrain.train_fixture(log)
            return 0
        store = (
            places.store
            if stored_path(places.store, args.retrain_at_commit).is_file()
            else retrain.FIXTURE_DIR
        )
        diffs = retrain.retrain_at_commit(args.retrain_at_commit, store, log)
        log("the same numbers, exactly" if not diffs else "differs: " + "; ".join(diffs))
        return 1 if diffs else 0
    chosen = select(args.methods, available)
    plans = plan_all(chosen, args.seeds, args.steps, args.eval_every, _eval_spec(args))
    if args.verify_stale:
        _verify(plans, places, log)
    elif args.refine_reach:
        _refine(plans, places, log)
    elif not args.no_train:
        _train(plans, places, args, log)
    from benchmarks.reproduce import report

    rows, missing = report.build_rows(plans, ArmCache(places.store), places.reach)
    for gap in missing:
        log(f"  missing arm: {gap['row']} {gap['role']} seed {gap['seed']} (key {gap['key']})")
    if missing and args.no_train and not args.allow_missing:
        rows_missing = ",".join(sorted({gap["row"] for gap in missing}))
        log(
            f"{len(missing)} arms are not stored: nothing written. Train them with {report.COMMAND} --methods "
            f"{rows_missing} (or write the table anyway with --no-train --allow-missing)"
        )
        return 1
    report.write(places, rows, complete={m.name for _, m in chosen} == set(available))
    print(f"wrote {places.results}, {places.doc} and {places.curves}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
