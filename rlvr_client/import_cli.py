"""``rlvr import PATH --project SLUG``: send a finished run from files, in one command.

PATH is an RLVR ingest file (docs/ingest_format.md), a run directory of ``rlvr train``, or verl's rollout
dump (``--format verl``; docs/integrations/verl.md). Every line is checked first (an error names the file,
the line and the field, and nothing is sent), then the run is sent through the ingest client with a key
made from the files' content and the project: importing the same files again finds the same run and
changes nothing. Imports neither Django nor torch (transformers only with ``--tokenizer``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from rlvr_client import jsonl_import
from rlvr_client.jsonl_import import (
    Checkpoint,
    Finish,
    ImportPlan,
    Item,
    Limits,
    Metrics,
    Reader,
    Rollout,
)
from rlvr_client.run import BATCH_METRIC_POINTS, BATCH_ROLLOUTS, BATCH_TOKENS, IngestRun, start_run
from rlvr_client.wire import FINISH_STATUSES, IngestError

FORMATS = ("auto", "rlvr", "trainer", "verl")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rlvr import",
        description="Send a finished run to RLVR Studio: an RLVR ingest file (.jsonl), a run directory of "
        "`rlvr train`, or verl's rollout dump (trainer.rollout_data_dir). Importing the same files "
        "into the same project again finds the same run.",
    )
    p.add_argument("path", help="FILE.jsonl, or a directory (rlvr train's output, or verl's rollout dump)")
    p.add_argument("--project", required=True, help="project slug (or id)")
    p.add_argument("--name", help="run name (default: the run line's name, else the file or directory name)")
    p.add_argument("--experiment", help="experiment to file the run under (default: the run's name)")
    p.add_argument("--url", help="server (default: $RLVR_URL, else the one you logged in to)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="what PATH is (default: a file is an RLVR ingest file; a directory is told by its files)",
    )
    p.add_argument(
        "--config", help="YAML/JSON file with the run's config (merged over the run line's config)"
    )
    p.add_argument(
        "--status",
        choices=FINISH_STATUSES,
        default="succeeded",
        help="the run's outcome when the files do not say (no finish line / end event)",
    )
    p.add_argument(
        "--metrics",
        help="with --format verl: verl's FileLogger output (trainer.logger=[file]) for "
        "the step metrics; without it they are computed from the dump",
    )
    p.add_argument(
        "--tokenizer",
        help="with --format verl: a Hugging Face tokenizer folder to split completions "
        "into tokens (no logprobs: verl does not dump them)",
    )
    p.add_argument("--check", action="store_true", help="only check the files and say what would be sent")
    p.add_argument(
        "--spool-dir", help="the client's spool (default: $RLVR_SPOOL_DIR or ~/.cache/rlvr-studio/spool)"
    )
    p.add_argument("--max-line-mb", type=float, default=Limits.line_bytes / 2**20, help="longest line (MB)")
    p.add_argument("--max-lines", type=int, default=Limits.lines, help="most lines over all files")
    return p


def reader_for(args: argparse.Namespace, path: Path) -> tuple[str, Reader]:
    fmt = jsonl_import.detect_format(path) if args.format == "auto" else args.format
    if fmt != "verl" and (args.metrics or args.tokenizer):
        raise IngestError("--metrics and --tokenizer go with --format verl")
    if fmt == "rlvr":
        if not path.is_file():
            raise IngestError(f"{path} is not a file: an RLVR ingest file is one .jsonl file")
        return fmt, jsonl_import.read_ingest_file(path)
    if not path.is_dir():
        raise IngestError(f"{path} is not a directory (--format {fmt} reads a directory)")
    if fmt == "trainer":
        return fmt, jsonl_import.read_trainer_dir(path)
    from rlvr_client import verl

    metrics = Path(args.metrics) if args.metrics else None
    if metrics is not None and not metrics.is_file():
        raise IngestError(f"--metrics {metrics} does not exist")
    retokenize = verl.Retokenizer(args.tokenizer) if args.tokenizer else None
    return fmt, verl.read_dump_dir(path, metrics, retokenize)


def apply_options(plan: ImportPlan, args: argparse.Namespace) -> None:
    """--name, --experiment and --config over what the files say."""
    if args.name:
        plan.header.name = args.name
    if args.experiment:
        plan.header.experiment = args.experiment
    if args.config:
        from rlvr_client.client import ClientError, load_experiment_file

        try:
            plan.header.config = {**plan.header.config, **load_experiment_file(args.config)}
        except ClientError as err:
            raise IngestError(str(err)) from None


class Sender:
    """Hands the items to ``IngestRun``, waiting for the sender thread after each batch's worth: the
    reader outpaces the network, and a queue cut only when the thread wakes could exceed the server's
    per-batch bounds."""

    def __init__(self, run: IngestRun) -> None:
        self.run = run
        self.rollouts = self.tokens = self.points = 0

    def send(self, item: Item) -> None:
        if isinstance(item, Metrics):
            self.run.log_metrics(item.step, item.values)
            self.points += len(item.values)
        elif isinstance(item, Rollout):
            self.run.log_rollouts(item.step, [{k: v for k, v in item.fields.items() if k != "step"}])
            self.rollouts += 1
            self.tokens += item.tokens
        elif isinstance(item, Checkpoint):
            self.run.log_checkpoint(item.step, item.uri)
        if (
            self.rollouts >= BATCH_ROLLOUTS
            or self.tokens >= BATCH_TOKENS
            or self.points >= BATCH_METRIC_POINTS
        ):
            self.wait()

    def wait(self) -> None:
        self.run.flush(stop_when_offline=True)
        self.rollouts = self.tokens = self.points = 0
        if self.run.rejections:
            raise SendFailed(f"the server refused a batch: {self.run.rejections[0]}")
        if self.run.offline:
            raise ServerGone(
                f"cannot reach {self.run.transport.url}: run the same command again when it answers (the run's key "
                "is the same, so what was sent already is not doubled)"
            )


class SendFailed(IngestError):
    """The files were fine, the sending was not (exit status 1, where a bad file or option is 2)."""


class ServerGone(SendFailed):
    """The server stopped answering mid-import: the run is left open, for the same command to complete."""


def _progress(out: IO[str]) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=out),
        transient=False,
    )


def check(fmt: str, reader: Reader, limits: Limits, total_bytes: int, out: IO[str]) -> ImportPlan:
    with _progress(out) as progress:
        task = progress.add_task("checking", total=total_bytes)
        plan = jsonl_import.scan(fmt, reader, limits, on_bytes=lambda n: progress.advance(task, n))
        progress.update(task, completed=total_bytes)
    return plan


def send(
    plan: ImportPlan, reader: Reader, limits: Limits, args: argparse.Namespace, out: IO[str]
) -> IngestRun:
    header = plan.header
    run = start_run(
        project=args.project,
        name=header.name,
        config=header.config,
        source=header.source,
        source_info=header.source_info,
        max_steps=plan.max_steps,
        experiment=header.experiment,
        url=args.url,
        key=plan.key(args.project),
        spool_dir=args.spool_dir,
        stamp_elapsed=False,  # the steps happened earlier
    )
    sender = Sender(run)
    outcome = plan.finish or Finish("(default)", args.status)
    try:
        with _progress(out) as progress:
            task = progress.add_task("sending", total=plan.items)
            for item in _sendable(jsonl_import.items(reader, limits)):
                sender.send(item)
                progress.advance(task)
            sender.wait()
    except ServerGone:
        run.close()
        raise
    except IngestError as err:
        run.finish("failed", error_message=f"rlvr import stopped: {err}"[:10_000])
        raise
    run.finish(outcome.status, final_metrics=outcome.final_metrics, error_message=outcome.error_message)
    return run


def _sendable(stream: Iterator[Item]) -> Iterator[Item]:
    for item in stream:
        if not isinstance(item, Finish):
            yield item


def _total_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and p.suffix == ".jsonl")


def run_import(args: argparse.Namespace, out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    path = Path(args.path)
    if not path.exists():
        raise IngestError(f"{path} does not exist")
    limits = Limits(line_bytes=int(args.max_line_mb * 2**20), lines=args.max_lines)
    fmt, reader = reader_for(args, path)
    total = _total_bytes(path) + (Path(args.metrics).stat().st_size if args.metrics else 0)
    plan = check(fmt, reader, limits, total, err)
    apply_options(plan, args)
    outcome = plan.finish.status if plan.finish else f"{args.status} (the files do not say; --status)"
    print(f"{path} ({fmt}): {plan.summary()}; outcome {outcome}", file=out)
    if args.check:
        print(
            f"checked, nothing sent (the run's key in project {args.project}: {plan.key(args.project)})",
            file=out,
        )
        return 0
    run = send(plan, reader, limits, args, err)
    if run.rejections:
        print(f"error: the server refused part of the run: {run.rejections[0]}", file=err)
        return 1
    if not run.spool.is_empty():
        print(
            f"the server did not take everything: it waits in {run.spool.dir}; `rlvr sync` sends it", file=err
        )
        return 1
    print(
        f"run {run.run_id} ({plan.header.name}): {run.page_url or '(no page: the server did not answer)'}",
        file=out,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``rlvr import ...``; ``argv`` may start with the word ``import`` (as webapp/cli.py passes it)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["import"]:
        args_list = args_list[1:]
    args = build_parser().parse_args(args_list)
    try:
        return run_import(args)
    except SendFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except IngestError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
