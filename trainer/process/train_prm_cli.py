"""``rlvr train-prm``: train a process reward model from a step-labelled file, or build the tiny chain PRM.

    rlvr train-prm --recipe chain                                    # the tiny chain PRM, cached under RLVR_HOME
    rlvr train-prm --labels steps.jsonl --format math_shepherd|prm800k --base-model DIR --out PRM_DIR [--epochs 2 ...]

Prints one progress line per measured step (stderr) and the folder at the end (stdout). Imports only the trainer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_train_prm_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train-prm", help="train a process reward model from step labels, or build the tiny chain PRM"
    )
    p.add_argument("--recipe", choices=["chain"], help="build the built-in tiny chain-arithmetic PRM")
    p.add_argument("--labels", help="a step-labelled file (.jsonl, .json, .csv or .parquet)")
    p.add_argument("--format", choices=["math_shepherd", "prm800k"], default="math_shepherd")
    p.add_argument("--neutral", type=float, default=1.0, help="prm800k: the label of a neutral (0) rating")
    p.add_argument("--base-model", help="a causal-LM or token-classification folder, or tiny:<name>")
    p.add_argument("--out", help="the folder to write the PRM to")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--held-out-frac", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="--recipe: rebuild even if cached")
    p.set_defaults(func=_cmd_train_prm)


def _print_progress(progress: Any) -> None:
    if progress.held_out_step_accuracy is not None:
        eta = progress.eta_s
        left = f" · about {eta:.0f} s left" if eta is not None else ""
        print(
            f"step {progress.step} / {progress.total} · loss {progress.loss:.4f} · held-out step accuracy "
            f"{progress.held_out_step_accuracy:.3f} · first-error accuracy "
            f"{progress.held_out_first_error_accuracy:.3f}{left}",
            file=sys.stderr,
            flush=True,
        )


def _cmd_train_prm(args: argparse.Namespace) -> int:
    from trainer.errors import ConfigError

    if args.recipe == "chain":
        import shutil

        from trainer.process.tiny_prm import ensure_tiny_prm, tiny_prm_path

        if args.force:
            shutil.rmtree(tiny_prm_path(), ignore_errors=True)
        print(
            ensure_tiny_prm(on_progress=_print_progress, log=lambda m: print(m, file=sys.stderr, flush=True))
        )
        return 0
    if not (args.labels and args.base_model and args.out):
        raise ConfigError("rlvr train-prm needs --recipe chain, or all of --labels, --base-model and --out")
    from pydantic import ValidationError

    from trainer.process.prm_config import PRMTrainingConfig
    from trainer.process.prm_training import file_labels, train_prm

    try:
        config = PRMTrainingConfig(
            base_model=args.base_model, output_dir=args.out, epochs=args.epochs, learning_rate=args.lr,
            batch_size=args.batch_size, micro_batch_size=args.batch_size, max_length=args.max_length,
            held_out_frac=args.held_out_frac, seed=args.seed,
        )  # fmt: skip
    except ValidationError as err:
        raise ConfigError(f"invalid option: {err.errors()[0]['loc'][0]}: {err.errors()[0]['msg']}") from None
    examples, source = file_labels(Path(args.labels), args.format, neutral=args.neutral)
    if source["skipped"]:
        print(f"{source['skipped']} rows skipped; first: {source['first_problem']}", file=sys.stderr)
    result = train_prm(config, examples, on_progress=_print_progress, source=source)
    print(
        f"held-out step accuracy {result.held_out_step_accuracy} on {result.held_out_steps} steps (majority class "
        f"{result.majority_step_accuracy}); first-error accuracy {result.held_out_first_error_accuracy} "
        f"(majority class {result.majority_first_error_accuracy})",
        file=sys.stderr,
    )
    print(result.output_dir)
    return 0
