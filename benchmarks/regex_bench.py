"""User regexes: Python's backtracking ``re`` (before) against RE2 and the out-of-process bench (after).

Not a test (timings live in benchmarks/, never in assertions). All figures come from one run, so the ratios
compare like with like:

1. ``regex_format`` with ``(a+)+$`` on ``'a' * 27 + 'b'`` as it ran before, in the calling thread with
   Python's ``re`` (the old verifier's ``re.compile(pattern, re.DOTALL).fullmatch(text.strip())``): both the
   web test bench and training ran exactly this;
2. the same verdict by today's verifier, in the calling thread (training's path, ``score_batch``);
3. the same verdict through the test bench's path (trainer/verifiers/isolated.py: a timeout-pool worker
   under the 5 s budget): the median of warm calls, and once the first call of the run (a worker starts);
4. ``--slow-case``: a verdict that is slow even in RE2 (extract 'regex' ``a.*z|a`` on 100,000 ``a``s, whose
   last match is found by 100,000 searches) in the calling thread and through the bench, which stops it at
   the budget.

    .venv/bin/python benchmarks/regex_bench.py                  # ~15 s, mostly the old engine's 12 s
    .venv/bin/python benchmarks/regex_bench.py --doubling       # also n = 24, 25, 26 (each +1 doubles re)
    .venv/bin/python benchmarks/regex_bench.py --slow-case --out /tmp/regex.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.samples import Sample
from trainer.verifiers import build_verifiers, score_batch
from trainer.verifiers.isolated import DEFAULT_BUDGET_S, IsolatedScorer

PATTERN = r"(a+)+$"
PARAMS = {"pattern": PATTERN}
SLOW = {"extract": "regex", "pattern": "a.*z|a"}
OUT = Path(__file__).resolve().parent / "results" / "regex_bench.json"


class _Spec:
    def __init__(self, name: str, params: dict[str, Any]) -> None:
        self.name, self.params, self.key = name, params, name


def seconds(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def old_regex_format(text: str) -> bool:
    """The verifier before RE2: Python's re, DOTALL, fullmatch of the stripped completion."""
    return re.compile(PATTERN, re.DOTALL).fullmatch(text.strip()) is not None


def new_in_thread(text: str) -> float:
    verifiers = build_verifiers([_Spec("regex_format", PARAMS)])
    return score_batch(verifiers, [1.0], [text], [Sample("s", "")]).total[0]


def measure(n: int, scorer: IsolatedScorer, repeats: int) -> dict[str, Any]:
    text = "a" * n + "b"
    old_s, old_match = seconds(lambda: old_regex_format(text))
    thread_runs = [seconds(lambda: new_in_thread(text))[0] for _ in range(repeats * 4)]
    (verdict,) = scorer.score("regex_format", PARAMS, [(text, None)])
    assert not old_match and not verdict.correct and "error" not in verdict.detail  # same verdict, no timeout
    bench_runs = [
        seconds(lambda: scorer.score("regex_format", PARAMS, [(text, None)]))[0] for _ in range(repeats)
    ]
    thread_s, bench_s = statistics.median(thread_runs), statistics.median(bench_runs)
    return {
        "n": n, "old_re_in_thread_s": old_s, "re2_in_thread_s": thread_s, "bench_s": bench_s,
        "ratio_old_over_re2_in_thread": old_s / thread_s, "ratio_old_over_bench": old_s / bench_s,
    }  # fmt: skip


def slow_case(scorer: IsolatedScorer) -> dict[str, Any]:
    text = "a" * 100_000
    in_thread_s, _ = seconds(
        lambda: build_verifiers([_Spec("exact", SLOW)])[0][1]([text], [Sample("s", "", "a")])
    )
    bench_s, (verdict,) = seconds(lambda: scorer.score("exact", SLOW, [(text, "a")]))
    return {"in_thread_s": in_thread_s, "bench_s": bench_s, "bench_error": verdict.detail.get("error")}


def _revision() -> str:
    """The commit measured (with '+dirty' when the tree has uncommitted changes)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doubling", action="store_true", help="also time n = 24, 25, 26")
    parser.add_argument("--slow-case", action="store_true", help="also time a verdict slow even in RE2")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    scorer = IsolatedScorer()
    try:
        cold_s, _ = seconds(lambda: scorer.score("regex_format", PARAMS, [("a", None)]))
        rows = [measure(n, scorer, args.repeats) for n in ([24, 25, 26, 27] if args.doubling else [27])]
        slow = slow_case(scorer) if args.slow_case else None
    finally:
        scorer.close()
    print(f"regex_format {PATTERN!r} on 'a' * n + 'b' (bench budget {DEFAULT_BUDGET_S:g} s; the run's first "
          f"bench call, starting a worker: {cold_s:.3f} s)")  # fmt: skip
    print(f"{'n':>3} {'old re':>10} {'RE2 thread':>11} {'bench':>9} {'old/thread':>11} {'old/bench':>10}")
    for r in rows:
        print(
            f"{r['n']:>3} {r['old_re_in_thread_s']:>9.3f}s {r['re2_in_thread_s'] * 1e3:>9.3f}ms "
            f"{r['bench_s'] * 1e3:>7.2f}ms {r['ratio_old_over_re2_in_thread']:>10.0f}x {r['ratio_old_over_bench']:>9.0f}x"
        )
    if slow:
        print(f"slow even in RE2 (last match of 'a.*z|a' in 100,000 a's): in the thread {slow['in_thread_s']:.2f} s, "
              f"bench {slow['bench_s']:.2f} s -> {slow['bench_error']!r}")  # fmt: skip
    report = {
        "revision": _revision(), "python": platform.python_version(), "machine": platform.machine(),
        "load_average": os.getloadavg(),
        "bench_first_call_s": cold_s, "rows": rows, "slow_case": slow,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
