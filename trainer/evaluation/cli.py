"""``rlvr eval``: benchmark a model or checkpoint from the command line, resumable after a crash.

Every finished problem is appended (and flushed) to ``<out stem>.problems.jsonl`` as it completes, after
one header line per benchmark that records the model and the validated benchmark config; ``--resume``
reads that file back (a half-written last line from a crash is dropped) and regenerates nothing that
is in it. At the end a table is printed and ``--out`` (JSON) holds metrics, CIs, timings and every
problem's samples.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import IO, Any

from trainer.errors import ConfigError
from trainer.evaluation.config import BenchmarkConfig
from trainer.evaluation.engine import EvalResult, ProblemResult


def add_eval_parser(sub: Any) -> None:
    """Register ``rlvr eval`` on the ``rlvr`` subparsers."""
    p = sub.add_parser("eval", help="benchmark a model or checkpoint: Avg@n, Pass@k, maj@k with CIs")
    p.add_argument(
        "--model",
        required=True,
        help="'tiny:addition', a Hugging Face model directory, or a run / step-NNNNNN checkpoint",
    )
    p.add_argument(
        "--benchmark",
        action="append",
        required=True,
        metavar="NAME|FILE",
        help="'builtin:addition', 'builtin:chain_sum-easy', ... ('builtin:all' for the suite) or a "
        "benchmark YAML/JSON file; repeat for several",
    )
    p.add_argument("--n", type=int, help="samples per problem (default: the benchmark's n_samples)")
    p.add_argument("--k", type=_int_list, help="pass@k values, e.g. 1,4,8 (default: 1,n)")
    p.add_argument("--maj-k", type=_int_list, help="maj@k values (default: n)")
    p.add_argument("--max-problems", type=int, help="evaluate only the first N problems")
    p.add_argument("--seeds", type=int, help="independent repetitions (CIs resample them too)")
    p.add_argument("--seed", type=int, help="sampling seed (default: the benchmark's)")
    p.add_argument("--temperature", type=float, help="sampling temperature")
    p.add_argument("--max-tokens", type=int, help="maximum new tokens per sample")
    p.add_argument("--batch-size", type=int, help="samples generated together (whole problems per batch)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="where to run the model")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--out", default="eval_results.json", help="results JSON (default: eval_results.json)")
    p.add_argument("--resume", action="store_true", help="continue from <out>.problems.jsonl")
    p.add_argument("--overwrite", action="store_true", help="discard an earlier <out>.problems.jsonl")
    p.set_defaults(func=cmd_eval)


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 1,4,8, got {text!r}"
        ) from None


def benchmarks_from_args(args: argparse.Namespace) -> list[BenchmarkConfig]:
    from trainer.evaluation.suite import builtin_benchmark_names, resolve_benchmark

    flags = {
        "n": "n_samples",
        "k": "pass_k",
        "maj_k": "maj_k",
        "max_problems": "max_problems",
        "seeds": "num_seeds",
        "seed": "seed",
        "temperature": "temperature",
        "max_tokens": "max_tokens",
        "batch_size": "batch_size",
    }
    overrides = {
        field: getattr(args, flag) for flag, field in flags.items() if getattr(args, flag) is not None
    }
    names: list[str] = []
    for spec in args.benchmark:
        names += builtin_benchmark_names() if spec == "builtin:all" else [spec]
    benchmarks = [resolve_benchmark(spec, **overrides) for spec in names]
    seen = [b.name for b in benchmarks]
    if len(set(seen)) != len(seen):
        raise ConfigError(f"two benchmarks are named alike in {seen}: give each a distinct name")
    return benchmarks


def problems_path(out: str | Path) -> Path:
    p = Path(out)
    return p.with_name(f"{p.stem}.problems.jsonl")


def read_progress(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, list[ProblemResult]]]:
    """(header per benchmark, finished problems per benchmark) from a progress file; a torn last line
    (the process died while writing it) is ignored, any other bad line is an error."""
    headers: dict[str, dict[str, Any]] = {}
    done: dict[str, list[ProblemResult]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines):
                break
            raise ConfigError(
                f"{path}, line {lineno}: not valid JSON; delete the file (or --overwrite) to start over"
            ) from None
        if record.get("kind") == "header":
            headers[record["benchmark"]] = record
        elif record.get("kind") == "problem":
            done.setdefault(record["benchmark"], []).append(ProblemResult.from_dict(record["result"]))
    return headers, done


class JsonlProgress:
    """EvalSink that appends each finished problem to the progress file (flushed: survives a crash) and
    advances a rich progress bar."""

    def __init__(self, stream: IO[str], benchmark: str, progress: Any, task: Any) -> None:
        self.stream, self.benchmark, self.progress, self.task = stream, benchmark, progress, task

    def on_start(self, total_problems: int, done: int) -> None:
        self.progress.update(self.task, total=total_problems, completed=done)

    def on_problem(self, result: ProblemResult) -> None:
        record = {"kind": "problem", "benchmark": self.benchmark, "result": result.to_dict()}
        self.stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.stream.flush()
        os.fsync(self.stream.fileno())
        self.progress.advance(self.task)

    def on_end(self, result: EvalResult) -> None:
        pass


def cmd_eval(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from trainer.evaluation.engine import evaluate, load_policy

    benchmarks = benchmarks_from_args(args)
    progress_file = problems_path(args.out)
    headers, done = _prepare_progress(progress_file, args, benchmarks)
    console = Console()
    policy = load_policy(args.model, args.device, args.dtype)
    results: dict[str, EvalResult] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with progress_file.open("a", encoding="utf-8") as stream, Progress(*columns, console=console) as progress:
        for bench in benchmarks:
            if bench.name not in headers:
                header = {
                    "kind": "header",
                    "benchmark": bench.name,
                    "model": args.model,
                    "config": bench.model_dump(mode="json"),
                }
                stream.write(json.dumps(header) + "\n")
                stream.flush()
            task = progress.add_task(bench.name, total=None)
            sink = JsonlProgress(stream, bench.name, progress, task)
            try:
                results[bench.name] = evaluate(bench, policy, sink=sink, done=done.get(bench.name, ()))
            except KeyboardInterrupt:
                console.print(
                    f"interrupted; finished problems are in {progress_file}: run the same command "
                    "with --resume to continue"
                )
                return 130
    _write_results(Path(args.out), args.model, benchmarks, results)
    console.print(results_table(args.model, results))
    for name, result in results.items():
        t = result.timings
        console.print(
            f"{name}: {t['generated_samples']:.0f} samples generated at {t['samples_per_s']:.1f}/s; "
            f"verification {100 * t['verify_frac']:.1f}% of generate+verify time"
        )
    console.print(f"results in {args.out}; per-problem samples in {progress_file}")
    return 0


def _prepare_progress(
    path: Path, args: argparse.Namespace, benchmarks: list[BenchmarkConfig]
) -> tuple[dict[str, dict[str, Any]], dict[str, list[ProblemResult]]]:
    """Headers and finished problems to resume from, after checking they belong to this evaluation."""
    if not path.exists() or args.overwrite:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
        return {}, {}
    if not args.resume:
        raise ConfigError(
            f"{path} holds an earlier evaluation: pass --resume to continue it, --overwrite to start over, "
            "or choose another --out"
        )
    headers, done = read_progress(path)
    _drop_torn_tail(path)
    for bench in benchmarks:
        header = headers.get(bench.name)
        if header is None:
            continue
        if header.get("model") != args.model or header.get("config") != bench.model_dump(mode="json"):
            raise ConfigError(
                f"{path} was written for benchmark {bench.name!r} with another model or settings "
                f"(model {header.get('model')!r}); resume with the same flags, or use --overwrite"
            )
    return headers, done


def _drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line (the process died mid-write) so appended lines start on their own."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def _write_results(
    out: Path, model: str, benchmarks: list[BenchmarkConfig], results: dict[str, EvalResult]
) -> None:
    configs = {b.name: b.model_dump(mode="json") for b in benchmarks}
    payload = {
        "model": model,
        "benchmarks": {name: {"config": configs[name], **r.to_dict()} for name, r in results.items()},
    }
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(out)


def results_table(model: str, results: dict[str, EvalResult]) -> Any:
    """A rich table: one row per benchmark metric, value and confidence interval."""
    from rich.table import Table

    table = Table(title=f"rlvr eval: {model}")
    for column in ("benchmark", "metric", "value", "CI"):
        table.add_column(column, justify="left" if column in ("benchmark", "metric") else "right")
    for name, result in results.items():
        for metric, value in result.metrics.items():
            low_high = result.ci.get(metric)
            ci = f"[{low_high[0]:.3f}, {low_high[1]:.3f}]" if low_high else ""
            counted = metric in ("truncated", "absent")  # sample counts, not rates
            table.add_row(name, metric, f"{value:.0f}" if counted else f"{value:.3f}", ci)
    return table
