"""Training-side maintenance of the store: retrain stale rows, verify them, retrain one arm at its recorded
commit, and the short fixture arm that the retrain-at-commit test uses.

- ``retrain_stale``: every arm of a stale row not trained at today's code revision is trained again now and
  replaces the stored one (resumable: an arm already retrained carries today's revision), except an arm that a
  current row also holds (its reach shows the code that trained it unchanged), then the row's reach is recorded
  (reach.py), so it is current.
- ``verify_stale``: the first steps of seed 0 of each of a stale row's arms, traced; when every metric equals the
  stored arm's first steps exactly, the change did not reach the numbers and the reach is stamped current
  ("verified against" the arms' commit).
- ``refine_reach``: a current row whose reach record names files only is traced again and its record given the
  code units that ran, so that later edits to code it never ran leave it current.
- ``retrain_at_commit``: one stored arm trained again in a ``git worktree`` at the commit it records (which must
  be clean), by that commit's own harness (``python -m benchmarks.reproduce.retrain --spec ...``), and compared
  with the stored numbers exactly (every metric but the timings, every evaluation).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence, Set
from pathlib import Path
from typing import Any

from benchmarks.reproduce.evaluation import EvalSpec
from benchmarks.reproduce.measures import ArmResult
from benchmarks.reproduce.provenance import ROOT, code_revision
from benchmarks.reproduce.store import ArmCache, ArmSpec, arm_key, load_arm, stored_path, write_arm

FIXTURE_DIR = Path(__file__).resolve().parent / "arms_fixture"
# A SHORT arm stored to be retrained at its recorded commit by a test: plain GRPO, 4 steps, 40 problems.
FIXTURE_SPEC = ArmSpec(
    {}, 0, 4, 2, EvalSpec(greedy_problems=40, sampled_problems=20, curve_problems=20, batch=40)
)
Log = Callable[[str], None]


def _threads() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def _first_seed_arms(plan: Any) -> list[tuple[str, Any]]:
    """(role, ArmSpec) of the row's arms of its first seed: the short pass's."""
    first = plan.pairs[0][0]
    return [(role, spec) for role, seed, spec in plan.arms() if seed == first]


def record_reach(plan: Any, store: Path, reach_dir: Path, log: Log, verified: str = "") -> None:
    """Trace the row's short pass and store its reach."""
    from benchmarks.reproduce import reach

    _, files, units = reach.short_pass(_first_seed_arms(plan), store)
    reach.write(reach_dir, plan.method.name, files, units, verified)
    log(f"  {plan.method.name}: reach recorded ({len(files)} files)")


def refine_reach(plan: Any, store: Path, reach_dir: Path, log: Log) -> None:
    """Trace the short pass of a row that is current and add the code units that ran to its reach record."""
    from benchmarks.reproduce import reach

    _, files, units = reach.short_pass(_first_seed_arms(plan), store)
    kept = reach.refine(reach_dir, plan.method.name, files, units)
    log(f"  {plan.method.name}: code units recorded for {kept} of its {len(files)} files")


def _seeds(plan: Any, probe_only: bool) -> set[int]:
    from benchmarks.reproduce.plan import PROBE_SEEDS

    pairs = plan.pairs[:PROBE_SEEDS] if probe_only else plan.pairs
    return {seed for seed, _, _ in pairs}


def all_current(plan: Any, cache: ArmCache, probe_only: bool = False, held: Set[str] = frozenset()) -> bool:
    """Every arm of the row (of its probe seeds: a row that cannot act) is stored and was trained at today's
    code revision, or is ``held`` (a current row holds it too)."""
    seeds = _seeds(plan, probe_only)
    keys = [arm_key(spec) for _, seed, spec in plan.arms() if seed in seeds]
    arms = [(key, cache.get(key)) for key in keys]
    return all(
        a is not None and (key in held or a.extra.get("code_revision") == code_revision()) for key, a in arms
    )


def verify_stale(plan: Any, store: Path, reach_dir: Path, log: Log) -> bool:
    """Re-run seed 0's first steps of each of the row's arms; stamp the reach current when they match exactly."""
    from benchmarks.reproduce import reach

    cache = ArmCache(store)
    arms = _first_seed_arms(plan)
    stored = {role: cache.get(arm_key(spec)) for role, spec in arms}
    absent = [role for role, arm in stored.items() if arm is None]
    if absent:
        log(f"  {plan.method.name}: cannot verify, arms not stored: {', '.join(absent)}")
        return False
    short, files, units = reach.short_pass(arms, store)
    for role, result in short.items():
        differs = reach.matches(result, stored[role])  # type: ignore[arg-type]
        if differs:
            log(
                f"  {plan.method.name}: not verified, the {role} arm's {differs}; retrain it with --retrain-stale"
            )
            return False
    commits = sorted({str(a.extra.get("git_commit")) for a in stored.values() if a is not None})
    reach.write(reach_dir, plan.method.name, files, units, verified=", ".join(commits))
    log(f"  {plan.method.name}: verified: the first {reach.SHORT_STEPS} steps equal the stored ones exactly")
    return True


def stale_arms(
    plan: Any, cache: ArmCache, probe_only: bool = False, held: Set[str] = frozenset()
) -> list[tuple[str, ArmSpec]]:
    """The row's arms (of its probe seeds: a row that cannot act) not trained at today's code revision or not
    stored, labelled for progress lines; an arm ``held`` by a current row is kept."""
    out = []
    seeds = _seeds(plan, probe_only)
    for role, seed, spec in plan.arms():
        if seed not in seeds or arm_key(spec) in held:
            continue
        arm = cache.get(arm_key(spec))
        if arm is None or arm.extra.get("code_revision") != code_revision():
            out.append((f"{plan.method.name} seed {seed} {role}", spec))
    return out


MODELS_DIFFER = "the built models differ"
PROCESSOR_DIFFERS = "trained on another processor"


def compare_arms(new: ArmResult, old: ArmResult) -> list[str]:
    """What differs between two trainings of one arm (timings aside): empty when they are the same run. When the
    models built for the new one are not the recorded ones (another processor's kernels round differently, so a
    recipe builds other weights there), or it was trained on another processor, that comes first: the runs cannot
    be the same."""
    from benchmarks.reproduce.reach import same_steps

    diffs = []
    here, there = new.extra.get("processor"), old.extra.get("processor")
    if here and there and here != there:
        diffs.append(
            f"{PROCESSOR_DIFFERS}: here {here!r}, recorded {there!r} (its kernels round differently, so the "
            "same weights train to other floats; an exact retraining needs the recorded processor)"
        )
    built, recorded = new.extra.get("models"), old.extra.get("models")
    if built and recorded and built != recorded:
        diffs.append(
            f"{MODELS_DIFFER}: built here {built}, recorded {recorded} (other builds of the recipe: models cached "
            "before the shipped weights, or built on another processor; an exact retraining needs the recorded ones)"
        )
    keys = same_steps(new.metrics, old.metrics)
    diffs += [f"metrics differ: {', '.join(keys[:4])}"] if keys else []
    strip = ("eval_s",)
    for i, (x, y) in enumerate(zip(new.evals, old.evals, strict=False)):
        if {k: v for k, v in x.items() if k not in strip} != {k: v for k, v in y.items() if k not in strip}:
            diffs.append(f"evaluation {i} (step {y.get('step')})")
    if len(new.evals) != len(old.evals):
        diffs.append(f"{len(new.evals)} evaluations vs {len(old.evals)}")
    return diffs


def retrain_at_commit(key: str, store: Path, log: Log, timeout: int = 1800) -> list[str]:
    """Train the stored arm ``key`` again at the commit it records (a temporary git worktree) and return what
    differs from the stored numbers (empty: the same run)."""
    path = stored_path(store, key)
    if not path.is_file():
        raise SystemExit(f"no stored arm {key} in {store}: give a key from results.json or the store")
    old = load_arm(path)
    commit = str(old.extra.get("git_commit", "unknown"))
    spec = old.extra.get("spec")
    if commit.endswith("+dirty") or commit == "unknown" or spec is None:
        raise SystemExit(
            f"arm {key} was trained at {commit!r}{' with no spec recorded' if spec is None else ''}: only an arm "
            "trained at a clean commit by a harness that records its spec can be retrained there"
        )
    with tempfile.TemporaryDirectory(prefix="reproduce-at-") as tmp:
        worktree = Path(tmp) / "checkout"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), commit],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        try:
            (Path(tmp) / "spec.json").write_text(json.dumps(spec))
            out = Path(tmp) / "arm.json.gz"
            env = {**os.environ, "PYTHONPATH": str(worktree), "OMP_NUM_THREADS": "1"}
            log(f"training arm {key} at commit {commit} in {worktree}")
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.reproduce.retrain",
                    "--spec",
                    str(Path(tmp) / "spec.json"),
                    "--out",
                    str(out),
                    "--store",
                    str(Path(tmp) / "store"),
                ],
                cwd=worktree,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if done.returncode != 0:
                raise SystemExit(f"training at {commit} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
            new = load_arm(out)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)],
                cwd=ROOT,
                capture_output=True,
                timeout=120,
            )
    return compare_arms(new, old)


def train_fixture(log: Log) -> Path:
    """Train the fixture arm now (do it at a clean commit) and store it in arms_fixture/."""
    from benchmarks.reproduce.arms import run_arm

    _threads()
    key = arm_key(FIXTURE_SPEC)
    result = run_arm(FIXTURE_SPEC, FIXTURE_DIR, use_store=False)
    log(f"stored the fixture arm {key} (commit {result.extra.get('git_commit')}) in {FIXTURE_DIR}")
    return stored_path(FIXTURE_DIR, key)


def main(argv: Sequence[str] | None = None) -> int:
    """The child a retrain-at-commit runs in the worktree: train one spec, write it to --out."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reproduce.retrain")
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True, help="for an offline pass and the start cache")
    args = parser.parse_args(argv)
    from benchmarks.reproduce.arms import train_arm

    _threads()
    result = train_arm(ArmSpec.from_json(json.loads(args.spec.read_text())), args.store)
    write_arm(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
