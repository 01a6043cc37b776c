"""``python -m benchmarks.reproduce.run --methods all --seeds 0 1 2 --steps 100``

Trains each selected method and the plain-GRPO baseline (cached per seed and config) on the tiny
addition model, compares them seed by seed, merges the rows into benchmarks/reproduce/results.json and
rewrites docs/reproduction.md from all rows there. No Django: trainer.step.loop.train with an in-memory sink.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import pkgutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import BASELINE, deep_merge
from benchmarks.reproduce.measures import MEASURES, ArmResult
from benchmarks.reproduce.method import Method, PrepareContext
from benchmarks.reproduce.verdict import markdown_table, mean_sd, paired_direction, verdict

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RESULTS = HERE / "results.json"
DOC = ROOT / "docs" / "reproduction.md"
CACHE = ROOT / ".cache" / "reproduce"


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
                raise SystemExit(f"method {method.name!r} is defined in both methods_{found[method.name][0]}.py and {info.name}.py")
            if method.measure not in MEASURES or any(f not in MEASURES for f in method.figures):
                raise SystemExit(f"method {method.name!r} names an unknown measure; known: {', '.join(MEASURES)}")
            found[method.name] = (area, method)
    return found


def _select(names: str, available: dict[str, tuple[str, Method]]) -> list[tuple[str, Method]]:
    if names == "all":
        return list(available.values())
    chosen = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in available and name.startswith("area:"):
            chosen += [am for am in available.values() if am[0] == name.removeprefix("area:")]
            continue
        if name not in available:
            raise SystemExit(f"unknown method {name!r}; known: {', '.join(sorted(available))} (or area:<name>, all)")
        chosen.append(available[name])
    return chosen


def evaluate_method(
    area: str, method: Method, seeds: Sequence[int], steps: int, eval_every: int, use_cache: bool, log: Any
) -> dict[str, Any]:
    """Run the method and its baseline for every seed; return the results.json row."""
    from benchmarks.reproduce.arms import run_arm

    arms: dict[str, list[ArmResult]] = {"method": [], "baseline": []}
    for seed in seeds:
        extra: dict[str, Any] = {}
        if method.prepare is not None:
            workdir = CACHE / "prepared" / method.name
            workdir.mkdir(parents=True, exist_ok=True)
            extra = method.prepare(PrepareContext(workdir, deep_merge(BASELINE, method.baseline_overrides), seed))
        for arm, overrides in (("baseline", method.baseline_overrides),
                               ("method", deep_merge(deep_merge(method.baseline_overrides, method.overrides), extra))):
            t0 = time.perf_counter()
            arms[arm].append(run_arm(overrides, seed, steps, eval_every, CACHE, use_cache))
            log(f"  {method.name} seed {seed} {arm}: {time.perf_counter() - t0:.1f}s")
    figures: list[dict[str, Any]] = []
    for name in (method.measure, *[f for f in method.figures if f != method.measure]):
        m = MEASURES[name]
        values = [m.fn(a, b) for a, b in zip(arms["method"], arms["baseline"], strict=True)]
        base = [m.fn(b, b) for b in arms["baseline"]]
        figures.append({"measure": name, "method": mean_sd(values, m.fmt), "baseline": mean_sd(base, m.fmt),
                        "method_values": values, "baseline_values": base, "direction": paired_direction(values, base)})
    return {
        "method": method.name, "area": area, "paper": method.paper, "claim": method.claim, "measure": method.measure,
        "direction": method.direction, "verdict": verdict(method.direction, figures[0]["direction"]),
        "figures": figures, "note": method.note, "seeds": list(seeds), "steps": steps, "eval_every": eval_every,
        "overrides": method.overrides, "baseline_overrides": method.baseline_overrides,
        "wall_s": sum(a.wall_s for arm in arms.values() for a in arm),
        "group_sizes_first_steps": arms["method"][0].extra.get("group_sizes_first_steps"),
    }


def write_doc(results: dict[str, Any]) -> None:
    rows = sorted(results["rows"].values(), key=lambda r: (r["area"], r["method"]))
    notes = [f"- **{r['method']}**: {r['note']}" for r in rows if r.get("note")]
    measures = "\n".join(f"- `{m.name}`: {m.description}" for m in MEASURES.values())
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(f"""# Reproduction table

Generated by `python -m benchmarks.reproduce.run` (benchmarks/reproduce/README.md); do not edit by hand.
Each method is trained against the same plain-GRPO baseline (benchmarks/reproduce/baseline.py: the tiny
warm-started addition model, 4 prompts x 8 completions, exact-match reward) with the same seeds and
step count (given per row); the figures are mean ± sd over seeds, method first, then the comparison
arm (plain GRPO, or the row's own baseline for composition claims: see the notes), then the paired direction. The paper's claims come from
much larger models: a claim that does not show here at this scale is reported as such, not tuned.

"Direction measured here" pairs each seed's method value with the same seed's baseline: it is clear when
every seed moves the same way and the mean difference is at least twice its standard error.

{markdown_table(rows)}

## Measured quantities

{measures}

## How each reproduction differs from its paper

{chr(10).join(notes) or "(none)"}
""")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reproduce.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="all", help="'all', or comma-separated method names / area:<area>")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=10, help="evaluate held-out accuracy every N steps")
    parser.add_argument("--no-cache", action="store_true", help="retrain arms even when a cached result exists")
    parser.add_argument("--list", action="store_true", help="list the discovered methods and exit")
    parser.add_argument("--doc-only", action="store_true", help="rewrite docs/reproduction.md from results.json and exit")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    available = discover_methods()
    if args.list:
        for name, (area, m) in sorted(available.items()):
            print(f"{area:12s} {name:28s} {m.paper:10s} {m.measure} {m.direction}")
        return 0
    if args.doc_only:
        write_doc(json.loads(RESULTS.read_text()))
        return 0
    if args.steps % args.eval_every:
        raise SystemExit("--steps must be a multiple of --eval-every")
    for area, method in _select(args.methods, available):
        print(f"{method.name} ({area}, {method.paper})", flush=True)
        row = evaluate_method(area, method, args.seeds, args.steps, args.eval_every, not args.no_cache,
                              lambda s: print(s, flush=True))
        row["updated"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        # Re-read just before writing: other engineers may have added their rows meanwhile.
        results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {"rows": {}}
        results["rows"][method.name] = row
        print(f"  -> {row['verdict']}: " + "; ".join(f"{f['measure']} {f['method']} vs {f['baseline']}" for f in row["figures"]))
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        write_doc(results)
    print(f"wrote {RESULTS.relative_to(ROOT)} and {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
