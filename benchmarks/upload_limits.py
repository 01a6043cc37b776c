"""Memory and time of data uploads and hostile data files (not a test; DESIGN.md keeps figures out of tests).

``--mode server`` (the default) measures what docs/datasets.md states: the web process's peak *extra*
memory per upload, for every format. It starts daphne on a fresh SQLite database, signs alice in with an
API token, and sends each file through the real API (preview, dataset upload or benchmark-file upload).
Before each request it resets the server's peak-RSS mark (``echo 5 > /proc/<pid>/clear_refs``) and reads
``VmRSS``; after it, ``VmHWM``: the difference is that upload's peak extra memory. Each
case starts a fresh daphne and previews a 1 MB file of its format first, so the imports (pyarrow for Parquet)
and memory an earlier case freed are not counted. Cases:

- ``jsonl-100mb``, ``json-100mb``, ``csv-100mb``, ``parquet-100mb``: valid files of about 100 MB (--mb,
  decoded, for Parquet), previewed and then stored; ``parquet-one-group-120mb``: one row group of 120 MB
  decoded, just under the row-group limit, previewed; ``parquet-big-page``: 120 MB of 2 MiB cells in one page
  that the footer checks let through, refused at row 1 once pyarrow has decoded the page;
- ``parquet-bomb-<codec>`` (zstd, gzip, snappy, brotli, lz4): one 400 MB cell, a few KB to MB on disk,
  as a dataset and as a benchmark file;
- ``json-giant-string`` (one 150 MB string), ``json-deep`` (100,000 nested arrays), ``jsonl-line`` (one 64 MB
  line), ``csv-giant-cell`` (one 100 MB quoted cell).

``--mode loader`` is the earlier check of the trainer's loader alone in a child process (peak RSS of the
child), kept for comparing loaders: ``--impl`` loads ``load_file_samples`` from another files.py.

    .venv/bin/python benchmarks/upload_limits.py                   # writes benchmarks/results/upload_limits.json
    .venv/bin/python benchmarks/upload_limits.py --case parquet-bomb-zstd --case jsonl-100mb
    git archive <commit> | tar -x -C /tmp/old && .venv/bin/python benchmarks/upload_limits.py --repo /tmp/old
    .venv/bin/python benchmarks/upload_limits.py --mode loader --case csv-columns
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "upload_limits.json"
CODECS = ("zstd", "gzip", "snappy", "brotli", "lz4")

# ---------------------------------------------------------------------------------------------- the files


def row_text(i: int) -> str:
    return (
        f"Problem {i}: a train leaves at {i % 97} km/h and another at {i % 89} km/h; " + "how far apart? " * 6
    )


def write_jsonl(path: Path, mb: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        i = 0
        while f.tell() < mb << 20:
            f.write(json.dumps({"question": row_text(i), "answer": str(i % 1000), "level": i % 5}) + "\n")
            i += 1


def write_json(path: Path, mb: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write("[\n")
        i = 0
        while f.tell() < mb << 20:
            f.write(
                ("" if i == 0 else ",\n") + json.dumps({"question": row_text(i), "answer": str(i % 1000)})
            )
            i += 1
        f.write("\n]\n")


def write_csv(path: Path, mb: int) -> None:
    import csv

    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "answer", "level"])
        i = 0
        while f.tell() < mb << 20:
            writer.writerow([row_text(i), str(i % 1000), str(i % 5)])
            i += 1


def write_parquet(path: Path, mb: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = (mb << 20) // len(row_text(0))
    table = pa.table(
        {"question": [row_text(i) for i in range(rows)], "answer": [str(i % 1000) for i in range(rows)]}
    )
    pq.write_table(table, path, compression="zstd", row_group_size=50_000)


def write_parquet_one_group(path: Path, mb: int = 120) -> None:
    """Distinct rows of about 1 KB in one row group of ``mb`` MiB decoded, just under the row-group limit: the
    most a Parquet upload makes pyarrow decode at once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = (mb << 20) // 1024
    questions = [f"{i}: " + row_text(i) * 8 for i in range(rows)]
    questions = [q[:1020] for q in questions]
    table = pa.table({"question": questions, "answer": [str(i % 1000) for i in range(rows)]})
    pq.write_table(table, path, compression="zstd", row_group_size=rows)


def write_parquet_big_page(path: Path) -> None:
    """The worst file the footer checks let through: one 120 MB row group written as one page (no dictionary),
    half its 120 rows holding 2 MiB cells, so pyarrow decodes the whole page before the cell check refuses
    row 1. What a Parquet upload can make the web process decode at once, short of a footer that lies."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    questions = [f"{i}:" + ("y" * (2 << 20) if i < 60 else "1+1=") for i in range(120)]
    pq.write_table(
        pa.table({"question": questions, "answer": ["2"] * 120}),
        path,
        compression="zstd",
        use_dictionary=False,
        data_page_size=1 << 30,
        row_group_size=120,
    )


def write_parquet_bomb(path: Path, codec: str, mb: int = 400) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"prompt": ["1+1="], "question": ["x" * (mb << 20)], "answer": ["2"]}),
        path,
        compression=codec,
    )


def write_json_giant_string(path: Path, mb: int = 150) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write('[{"question": "')
        for _ in range(mb):
            f.write("x" * 2**20)
        f.write('", "answer": "2"}]\n')


def write_json_deep(path: Path, depth: int = 100_000) -> None:
    path.write_text("[" * depth + "]" * depth, encoding="utf-8")


def write_jsonl_line(path: Path, mb: int = 64) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write('{"prompt": "')
        for _ in range(mb):
            f.write("x" * 2**20)
        f.write('", "answer": "2"}\n')


def write_csv_giant_cell(path: Path, mb: int = 100) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write('question,answer\n"')
        line = "x" * 1000 + "\n"
        for _ in range((mb << 20) // len(line)):
            f.write(line)
        f.write('",2\n')


# (case, file name, writer, endpoint, expected status)
Case = tuple[str, str, Callable[[Path, argparse.Namespace], None], str, int]


def server_cases(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    for fmt, writer in (
        ("jsonl", write_jsonl),
        ("json", write_json),
        ("csv", write_csv),
        ("parquet", write_parquet),
    ):
        name = f"{fmt}-{args.mb}mb"
        cases += [
            (f"{name} preview", f"big.{fmt}", lambda p, a, w=writer: w(p, a.mb), "preview", 200),  # type: ignore[misc]
            (f"{name} upload", f"big.{fmt}", lambda p, a, w=writer: w(p, a.mb), "upload", 201),
        ]  # type: ignore[misc]
    cases.append(
        (
            "parquet-one-group-120mb preview",
            "group.parquet",
            lambda p, a: write_parquet_one_group(p),
            "preview",
            200,
        )
    )
    cases.append(
        ("parquet-big-page upload", "page.parquet", lambda p, a: write_parquet_big_page(p), "upload", 400)
    )
    for codec in CODECS:
        bomb = f"parquet-bomb-{codec}"
        cases += [
            (
                f"{bomb} upload",
                f"{bomb}.parquet",
                lambda p, a, c=codec: write_parquet_bomb(p, c),
                "upload",
                400,
            ),  # type: ignore[misc]
            (
                f"{bomb} benchmark-file",
                f"{bomb}.parquet",
                lambda p, a, c=codec: write_parquet_bomb(p, c),  # type: ignore[misc]
                "benchmark-file",
                400,
            ),
        ]
    cases += [
        ("json-giant-string upload", "giant.json", lambda p, a: write_json_giant_string(p), "upload", 400),
        ("json-deep upload", "deep.json", lambda p, a: write_json_deep(p), "upload", 400),
        ("jsonl-line upload", "line.jsonl", lambda p, a: write_jsonl_line(p), "upload", 400),
        ("csv-giant-cell upload", "cell.csv", lambda p, a: write_csv_giant_cell(p), "upload", 400),
    ]
    return cases


def write_warm_up(path: Path) -> None:
    """A small file of the case's format: the first upload of a server imports its reader (pyarrow...)."""
    {".jsonl": write_jsonl, ".json": write_json, ".csv": write_csv, ".parquet": write_parquet}[path.suffix](
        path, 1
    )


# ---------------------------------------------------------------------------------------------- the server


def proc_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        return False
    return True


def seed(env: dict[str, str], repo: Path) -> tuple[int, str]:
    """Migrate a fresh SQLite database; alice, her project and an API token. (project id, token)"""
    code = (
        "import django; django.setup()\n"
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from django.contrib.auth.models import User\n"
        "from webapp.teams.services import project_create\n"
        "from webapp.accounts.tokens import issue_token\n"
        "alice = User.objects.create_user('alice', password='pw-alice-123')\n"
        "project = project_create(name='uploads', owner=alice)\n"
        "print(project.pk, issue_token(alice).token)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    pk, token = out.stdout.split()[-2:]
    return int(pk), token


def start_daphne(env: dict[str, str], repo: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    sys.path.insert(0, str(REPO))
    from webapp.stack import free_port, port_open

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
        cwd=repo, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not port_open("127.0.0.1", port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"daphne did not start; see {log}")
        time.sleep(0.2)
    return process, f"http://127.0.0.1:{port}"


def send(url: str, token: str, project: int, endpoint: str, path: Path, n: int) -> tuple[int, str]:
    import httpx

    target, fields = {
        "preview": (f"/api/projects/{project}/datasets/preview/", {}),
        "upload": (f"/api/projects/{project}/datasets/", {"name": f"case-{n}", "prompt_field": "question"}),
        "benchmark-file": (
            f"/api/projects/{project}/benchmark-files/",
            {"name": f"bench-{n}", "problem_field": "question"},
        ),
    }[endpoint]
    if path.suffix == ".jsonl" and path.name == "line.jsonl":
        fields = {**fields, "prompt_field": "prompt"}
    with path.open("rb") as f:
        response = httpx.post(
            url + target,
            headers={"Authorization": f"Token {token}"},
            files={"file": (path.name, f)},
            data=fields,
            timeout=1800,
        )
    if response.status_code < 300:
        return response.status_code, ""
    try:
        return response.status_code, str(response.json().get("message", response.text))
    except ValueError:  # not the API's JSON: a server error page
        return response.status_code, response.text[:400]


def run_server(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each case on a fresh daphne, warmed up with a small file of the same format: its peak RSS over the RSS
    before the request is that upload's extra memory, not hidden by memory an earlier upload freed."""
    repo = Path(args.repo).resolve()
    results: list[dict[str, Any]] = []
    wanted = args.case or []
    with tempfile.TemporaryDirectory(prefix="rlvr-upload-bench-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        env = {**os.environ, "RLVR_DATA_DIR": str(data), "RLVR_DEBUG": "1", "RLVR_ENQUEUE": "0",
               "RLVR_SECRET_KEY": "bench-secret-key-not-for-production-use-only-here",
               "DJANGO_SETTINGS_MODULE": "webapp.settings", "PYTHONPATH": str(repo)}  # fmt: skip
        env.pop("DATABASE_URL", None)
        project, token = seed(env, repo)
        for n, (name, filename, writer, endpoint, expected) in enumerate(server_cases(args)):
            if wanted and not any(name.startswith(w) for w in wanted):
                continue
            path = Path(tmp) / filename
            if not path.exists():
                for old in Path(tmp).glob("*.*"):
                    if old.is_file():
                        old.unlink()  # one case file on disk at a time
                writer(path, args)
            warm = Path(tmp) / f"warm-up{path.suffix}"
            write_warm_up(warm)
            server, url = start_daphne(env, repo, Path(tmp) / "daphne.log")
            try:
                warm_status, warm_message = send(url, token, project, "preview", warm, n)
                if warm_status != 200:
                    raise SystemExit(
                        f"the warm-up preview answered {warm_status}: {warm_message}\n"
                        + (Path(tmp) / "daphne.log").read_text()[-3000:]
                    )
                boot_kb = proc_kb(server.pid, "VmRSS")
                exact = reset_peak(server.pid)
                start = time.perf_counter()
                status, message = send(url, token, project, endpoint, path, n)
                seconds = time.perf_counter() - start
                peak_kb = proc_kb(server.pid, "VmHWM")
            finally:
                server.terminate()
                server.wait(timeout=30)
                warm.unlink()
            result = {
                "case": name, "file_mb": round(path.stat().st_size / 2**20, 2), "status": status,
                "expected": expected, "seconds": round(seconds, 2),
                "extra_peak_mb": round((peak_kb - boot_kb) / 1024, 1) if exact else None,
                "rss_before_mb": round(boot_kb / 1024, 1), "message": message[:200],
            }  # fmt: skip
            results.append(result)
            print(json.dumps(result), flush=True)
    return results


# ---------------------------------------------------------------------------------------------- the loader

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

LOADER_CASES: dict[str, tuple[str, Callable[[Path, argparse.Namespace], None]]] = {
    "csv-columns": ("wide.csv", lambda p, a: write_csv_columns(p, a.columns)),
    "jsonl-line": ("long.jsonl", lambda p, a: write_jsonl_line(p, a.line_mb)),
    "json-deep": ("deep.json", lambda p, a: write_json_deep(p)),
    **{
        f"parquet-bomb-{c}": (f"bomb-{c}.parquet", lambda p, a, c=c: write_parquet_bomb(p, c)) for c in CODECS
    },  # type: ignore[misc]
}


def write_csv_columns(path: Path, columns: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        f.write(",".join(["prompt", "answer"] + [f"c{i}" for i in range(columns - 2)]) + "\n")
        f.write(",".join(["1+1=", "2"] + ["x"] * (columns - 2)) + "\n")


def run_loader(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="rlvr-upload-bench-") as tmp:
        for case in args.case or list(LOADER_CASES):
            filename, writer = LOADER_CASES[case]
            path = Path(tmp) / filename
            writer(path, args)
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(Path(args.repo).resolve()), args.impl or "", str(path)],
                capture_output=True,
                text=True,
                timeout=args.timeout,
                check=False,
            )
            result: dict[str, Any] = {"case": case, "file_mb": round(path.stat().st_size / 2**20, 2)}
            if out.returncode != 0:
                result["crashed"] = out.stderr[-400:]
            else:
                result.update(json.loads(out.stdout.strip().splitlines()[-1]))
            results.append(result)
            print(json.dumps(result), flush=True)
            path.unlink()
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["server", "loader"], default="server")
    p.add_argument(
        "--case", action="append", help="run only the cases whose name starts with this (repeatable)"
    )
    p.add_argument("--mb", type=int, default=100, help="size of the valid files of the server mode")
    p.add_argument("--repo", default=str(REPO), help="the checkout to run (an older one, for a comparison)")
    p.add_argument("--columns", type=int, default=1_000_000)
    p.add_argument("--line-mb", type=int, default=64)
    p.add_argument(
        "--impl", default="", help="loader mode: a files.py to load instead of trainer/data/files.py"
    )
    p.add_argument("--timeout", type=int, default=1800, help="loader mode: seconds per case")
    p.add_argument("--out", default="", help=f"where to write the results (server mode default: {RESULTS})")
    args = p.parse_args()
    results = run_server(args) if args.mode == "server" else run_loader(args)
    out = Path(args.out) if args.out else (RESULTS if args.mode == "server" and not args.case else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "command": " ".join(["benchmarks/upload_limits.py", *sys.argv[1:]]),
            "repo": args.repo,
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpus": os.cpu_count(),
        }
        out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
