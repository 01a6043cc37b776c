"""``rlvr train-rm``: train a Bradley-Terry reward model from a pairs file, or build the tiny chain RM.

    rlvr train-rm --recipe chain                                   # tiny:chain-rm, cached under RLVR_HOME
    rlvr train-rm --pairs pairs.jsonl --base-model DIR --out RM_DIR [--epochs 2 --lr 1e-5 ...]

Prints one progress line per measured step and the folder at the end (stdout). Imports only the trainer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_train_rm_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train-rm", help="train a Bradley-Terry reward model from pairs, or build tiny:chain-rm"
    )
    p.add_argument(
        "--recipe", choices=["chain"], help="build the built-in tiny chain-arithmetic reward model"
    )
    p.add_argument("--pairs", help="a JSON Lines file with prompt, chosen and rejected")
    p.add_argument("--base-model", help="a causal-LM or sequence-classification folder, or tiny:<name>")
    p.add_argument("--out", help="the folder to write the reward model to")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--held-out-frac", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true", help="--recipe: rebuild even if cached")
    p.set_defaults(func=_cmd_train_rm)


def _print_progress(progress: Any) -> None:
    if progress.held_out_accuracy is not None:
        eta = progress.eta_s
        left = f" · about {eta:.0f} s left" if eta is not None else ""
        print(
            f"step {progress.step} / {progress.total} · loss {progress.loss:.4f} · held-out pairwise accuracy "
            f"{progress.held_out_accuracy:.3f}{left}",
            file=sys.stderr,
            flush=True,
        )


def _cmd_train_rm(args: argparse.Namespace) -> int:
    from trainer.errors import ConfigError

    if args.recipe == "chain":
        import shutil

        from trainer.rewards.tiny_rm import ensure_tiny_rm, tiny_rm_path

        if args.force:
            shutil.rmtree(tiny_rm_path(), ignore_errors=True)
        print(
            ensure_tiny_rm(on_progress=_print_progress, log=lambda m: print(m, file=sys.stderr, flush=True))
        )
        return 0
    if not (args.pairs and args.base_model and args.out):
        raise ConfigError("rlvr train-rm needs --recipe chain, or all of --pairs, --base-model and --out")
    from pydantic import ValidationError

    from trainer.rewards.bradley_terry import train_reward_model
    from trainer.rewards.bt_config import RMTrainingConfig
    from trainer.rewards.pairs import pairs_from_jsonl

    try:
        config = RMTrainingConfig(
            base_model=args.base_model, output_dir=args.out, epochs=args.epochs, learning_rate=args.lr,
            batch_size=args.batch_size, micro_batch_size=args.batch_size, max_length=args.max_length,
            held_out_frac=args.held_out_frac, seed=args.seed,
        )  # fmt: skip
    except ValidationError as err:
        raise ConfigError(f"invalid option: {err.errors()[0]['loc'][0]}: {err.errors()[0]['msg']}") from None
    result = train_reward_model(config, pairs_from_jsonl(Path(args.pairs)), on_progress=_print_progress)
    print(
        f"held-out pairwise accuracy {result.held_out_accuracy} on {result.held_out_pairs} pairs",
        file=sys.stderr,
    )
    print(result.output_dir)
    return 0
