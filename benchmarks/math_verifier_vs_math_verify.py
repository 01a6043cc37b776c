"""Our ``math`` verifier against raw math-verify on a table of hard answer forms (not a test: it prints).

    .venv/bin/python benchmarks/math_verifier_vs_math_verify.py [--table tests/data/math_equivalence.jsonl]

Each row of the table has a reference, a completion, the expected verdict and a kind (root, degrees,
scientific, choice letter, ...); multiple-choice rows also carry the sample's ``choices``. Raw math-verify
is called as open-r1's ``accuracy_reward`` does, ``verify(parse(gold), parse(completion))``, with the
reference wrapped in ``\\boxed{}`` (as our verifier wraps it), in this process. Ours is
``build_verifier("math")`` with its defaults, the choices in ``Sample.meta``. Both run in the same
invocation; the script prints one line per case and both accuracies.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TABLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "math_equivalence.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def raw_math_verify(rows: list[dict[str, Any]]) -> list[bool]:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    verdicts = []
    for row in rows:
        gold = parse(f"\\boxed{{{row['reference']}}}", parsing_timeout=None)  # type: ignore[arg-type]
        pred = parse(row["completion"], parsing_timeout=None)  # type: ignore[arg-type]
        verdicts.append(bool(gold and pred and verify(gold, pred, timeout_seconds=None)))
    return verdicts


def ours(rows: list[dict[str, Any]]) -> list[bool]:
    from trainer.samples import Sample
    from trainer.verifiers import build_verifier

    samples = [
        Sample(f"row-{i}", "?", row["reference"], {"choices": row["choices"]} if "choices" in row else {})
        for i, row in enumerate(rows, 1)
    ]
    results = build_verifier("math", {})([row["completion"] for row in rows], samples)
    for result in results:
        if "error" in result.detail:
            print(f"  (error: {result.detail['error']})")
    return [r.correct for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args()
    rows = load(args.table)
    started = time.monotonic()
    raw = raw_math_verify(rows)
    raw_s = time.monotonic() - started
    started = time.monotonic()
    mine = ours(rows)
    ours_s = time.monotonic() - started
    print(f"{'kind':<28} {'reference':<22} {'completion':<36} want  raw   ours")
    for row, r, o in zip(rows, raw, mine, strict=True):
        want = row["equivalent"]
        print(
            f"{row['kind'][:28]:<28} {row['reference'][:22]:<22} {row['completion'][:36]:<36} "
            f"{_mark(want):<5} {_mark(r, want):<5} {_mark(o, want)}"
        )
    n = len(rows)
    raw_right = sum(r == row["equivalent"] for r, row in zip(raw, rows, strict=True))
    ours_right = sum(o == row["equivalent"] for o, row in zip(mine, rows, strict=True))
    print(f"\nraw math-verify: {raw_right}/{n} right ({raw_s:.1f} s, in process)")
    print(f"our math verifier: {ours_right}/{n} right ({ours_s:.1f} s, timeout-pool workers included)")


def _mark(verdict: bool, want: bool | None = None) -> str:
    text = "yes" if verdict else "no"
    return text if want is None or verdict == want else text + "!"


if __name__ == "__main__":
    main()
