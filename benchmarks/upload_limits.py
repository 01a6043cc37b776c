"""Time and peak memory of refusing hostile data files (not a test; DESIGN.md keeps timings out of tests).

Each case writes a file, then loads it with ``trainer.data.files.load_file_samples`` in a fresh child
process and reports wall time, the child's peak RSS and the length of the error message:

- ``csv-columns``: a CSV whose header names ``--columns`` columns (default 1,000,000) and one data row;
- ``jsonl-line``: a JSON Lines file of one ``--line-mb`` MB line (default 64);
- ``json-deep``: a JSON file nested 100,000 arrays deep.

    .venv/bin/python benchmarks/upload_limits.py                      # the current loader
    git show <a commit before the limits>:trainer/data/files.py > /tmp/old_files.py
    .venv/bin/python benchmarks/upload_limits.py --impl /tmp/old_files.py --case csv-columns

``--impl`` loads ``load_file_samples`` from that file instead (it must import from the trainer package).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import importlib.util, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
impl, path = sys.argv[2], sys.argv[3]
if impl:
    spec = importlib.util.spec_from_file_location("files_under_test", impl)
    module = importlib.util.module_from_spec(spec)
    sys.modules["files_under_test"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
else:
    import trainer.data.files as module
start = time.perf_counter()
try:
    samples = module.load_file_samples(path)
    outcome, message = f"accepted {len(samples)} rows", ""
except Exception as err:
    outcome, message = type(err).__name__, str(err)
seconds = time.perf_counter() - start
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": round(seconds, 3), "peak_rss_mb": round(peak_mb, 1), "outcome": outcome,
                  "message_chars": len(message), "message_start": message[:160]}))
"""


def write_csv_columns(path: Path, columns: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write(",".join(["prompt", "answer"] + [f"c{i}" for i in range(columns - 2)]) + "\n")
        f.write(",".join(["1+1=", "2"] + ["x"] * (columns - 2)) + "\n")


def write_jsonl_line(path: Path, megabytes: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write('{"prompt": "')
        chunk = "x" * 2**20
        for _ in range(megabytes):
            f.write(chunk)
        f.write('", "answer": "2"}\n')


def write_json_deep(path: Path, depth: int = 100_000) -> None:
    path.write_text("[" * depth + "]" * depth, encoding="utf-8")


def run_case(case: str, args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    if case == "csv-columns":
        path = tmp / "wide.csv"
        write_csv_columns(path, args.columns)
    elif case == "jsonl-line":
        path = tmp / "long.jsonl"
        write_jsonl_line(path, args.line_mb)
    else:
        path = tmp / "deep.json"
        write_json_deep(path)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO), args.impl or "", str(path)],
        capture_output=True, text=True, timeout=args.timeout, check=False,
    )
    if out.returncode != 0:
        return {"case": case, "file_mb": round(path.stat().st_size / 2**20, 1), "crashed": out.stderr[-400:]}
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return {"case": case, "file_mb": round(path.stat().st_size / 2**20, 1), **result}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", choices=["csv-columns", "jsonl-line", "json-deep", "all"], default="all")
    p.add_argument("--columns", type=int, default=1_000_000)
    p.add_argument("--line-mb", type=int, default=64)
    p.add_argument("--impl", default="", help="a files.py to load instead of trainer/data/files.py")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per case")
    args = p.parse_args()
    cases = ["csv-columns", "jsonl-line", "json-deep"] if args.case == "all" else [args.case]
    with tempfile.TemporaryDirectory(prefix="rlvr-upload-bench-") as tmp:
        for case in cases:
            print(json.dumps(run_case(case, args, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
