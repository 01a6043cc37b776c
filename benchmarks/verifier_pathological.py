"""Wall time of one ``math`` batch of 8 pathological answers: the code before the batch timeout against this tree.

    .venv/bin/python benchmarks/verifier_pathological.py            # both, in the same run
    .venv/bin/python benchmarks/verifier_pathological.py --only new

The batch: four towers of powers (``9^9^9^9`` and kin: sympy tries to build the integer and never
finishes) and four fractions nested 200 levels deep (``--kind towers``: eight towers), all with the
reference ``3``, scored with the
verifier's default parameters. "old" is ``git archive <--old-rev> trainer`` (default: the last commit
before parallel judging) unpacked into a temporary folder and
run with the same interpreter (one worker on a 2-core machine, no
batch timeout by default); "new" is the working tree. Each side runs in its own subprocess, cold (its
worker processes start inside the timed call, as on the first batch of a run), and reports the wall
time, the rewards and the error of each answer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def pathological_batch(kind: str = "mixed") -> list[str]:
    if kind == "towers":
        return [f"{n}^{n}^{n}^{n}" for n in range(5, 10)] + [
            f"\\boxed{{{n}^{{{n}^{{{n}^{{{n}}}}}}}}}" for n in (7, 8, 9)
        ]
    nested = "1"
    for _ in range(200):
        nested = "\\frac{" + nested + "}{2}"
    towers = ["9^9^9^9", "8^8^8^8", "\\boxed{9^{9^{9^{9}}}}", "\\boxed{7^{7^{7^{7}}}}"]
    return [*towers, f"$x = {nested}$", f"\\boxed{{{nested}}}", f"so ${nested}$", f"\\[{nested}\\]"]


def measure(kind: str = "mixed") -> dict[str, Any]:
    """Run inside the subprocess: score the batch once and report."""
    from trainer.samples import Sample
    from trainer.verifiers import build_verifier
    from trainer.verifiers.timeout_pool import default_workers

    completions = pathological_batch(kind)
    samples = [Sample(f"p{i}", "?", "3") for i in range(len(completions))]
    verifier = build_verifier("math", {})
    started = time.monotonic()
    results = verifier(completions, samples)
    wall = time.monotonic() - started
    params = verifier.params.model_dump()  # type: ignore[attr-defined]
    return {
        "wall_s": round(wall, 2),
        "rewards": [r.reward for r in results],
        "errors": [r.detail.get("error") for r in results],
        "timeout_s": params.get("timeout_s"),
        "batch_timeout_s": params.get("batch_timeout_s"),
        "workers": params.get("workers", default_workers()),
    }


def run_side(tree: Path, kind: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
        f"import json, verifier_pathological as b; print(json.dumps(b.measure({kind!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise SystemExit(f"the run in {tree} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


OLD_REV = "c91b2e2"  # the last commit before the parallel judging and the default batch timeout


def old_tree(into: Path, rev: str) -> Path:
    archive = into / "old.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", rev, "trainer"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["old", "new"])
    parser.add_argument(
        "--kind",
        choices=["mixed", "towers"],
        default="mixed",
        help="mixed: 4 towers + 4 nested fractions (default); towers: 8 towers of powers, all hanging",
    )
    parser.add_argument(
        "--old-rev", default=OLD_REV, help="the commit whose trainer/ is 'old' (default %(default)s)"
    )
    args = parser.parse_args()
    print(f"cpus: {len(os.sched_getaffinity(0))}, load average: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="rlvr-bench-") as tmp:
        sides = {
            "old": lambda: run_side(old_tree(Path(tmp), args.old_rev), args.kind),
            "new": lambda: run_side(ROOT, args.kind),
        }
        for name, run in sides.items():
            if args.only not in (None, name):
                continue
            report = run()
            print(
                f"{name}: {report['wall_s']:6.1f} s for 8 pathological answers "
                f"(timeout_s={report['timeout_s']}, batch_timeout_s={report['batch_timeout_s']}, "
                f"workers={report['workers']}); rewards {report['rewards']}"
            )
            for error in dict.fromkeys(e for e in report["errors"]):
                print(f"    error: {error}")


if __name__ == "__main__":
    main()
