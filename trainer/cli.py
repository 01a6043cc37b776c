"""The ``rlvr`` command's trainer subcommands: train, demo, init-model, eval, config-schema, methods.

Imports only the trainer layer, and the ingest client (rlvr_client/, httpx only) for ``--report-to``. User-facing errors (``RLVRError``) are printed as one clear message with
exit code 2; anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainer.errors import ConfigError, RLVRError


def _cmd_config_schema(args: argparse.Namespace) -> int:
    from trainer.config import config_schema

    print(json.dumps(config_schema(), indent=2))
    return 0


def _cmd_methods(args: argparse.Namespace) -> int:
    """Every method of every axis: the config field that chooses it, its one-line description, its params."""
    import trainer.config  # noqa: F401  -- registers every method
    from trainer.methods.axes import AXES

    for field in sorted(AXES):
        axis = AXES[field]
        default = f" (default {axis.default})" if axis.default else " (a list, applied in order)"
        print(f"{field}{default}: {axis.description}")
        for entry in axis.choices():
            params = ", ".join(f"{name}={info.default!r}" for name, info in entry.params.model_fields.items())
            print(
                f"  {entry.name:<18} {entry.description}"
                + (f"\n  {'':<18} params: {params}" if params else "")
            )
        print()
    return 0


def _cmd_init_model(args: argparse.Namespace) -> int:
    """Build a built-in model, printing its progress and time left as the run page's build phase words them
    (the same ``model_build_reporter``): a line rewritten in a terminal, a line every few seconds elsewhere."""
    from trainer.models.tiny_model import ensure_tiny_model, recipe_for, tiny_model_path
    from trainer.sinks import PhaseLines
    from trainer.step.run_setup import model_build_reporter

    name = args.model
    if args.teacher and not name.endswith("-teacher"):  # the teacher of --model
        name = f"{name}-teacher"
    recipe_for(name)  # ValueError naming the valid models
    if args.sft_steps is not None and args.sft_steps < 1:
        raise ValueError(f"--sft-steps must be at least 1, got {args.sft_steps}")
    if (tiny_model_path(name) / "config.json").exists() and not args.force:
        print(tiny_model_path(name))
        return 0
    if args.force:
        import shutil

        shutil.rmtree(tiny_model_path(name), ignore_errors=True)
    report = model_build_reporter(
        PhaseLines(sys.stderr)
    )  # progress on stderr; the notes and the folder on stdout
    path = ensure_tiny_model(
        name,
        sft_steps=args.sft_steps,
        on_progress=report,
        log=lambda m: print(m, flush=True),
        from_recipe=args.build,
    )
    print(path)
    return 0


def _run_training(config_dict: dict, args: argparse.Namespace, source: str) -> int:  # type: ignore[type-arg]
    from trainer.config import config_from_dict
    from trainer.distributed.outside import outside_rank, train_outside
    from trainer.sinks import ConsoleSink, JsonlSink, MultiSink
    from trainer.step.loop import train

    for override in args.set or []:
        _apply_override(config_dict, override)
    if args.output_dir:
        config_dict.setdefault("checkpoint", {})["output_dir"] = args.output_dir
    config = config_from_dict(config_dict, source=source)
    reporter = _Reporter(args, config_dict, config.training.max_steps)

    def sinks() -> MultiSink:
        return MultiSink(
            [
                ConsoleSink(log_every=args.log_every),
                JsonlSink(config.checkpoint.output_dir),
                *reporter.sinks(),
            ]
        )

    place = outside_rank()
    try:
        if place is not None:  # a rank torchrun / srun started on one of the run's nodes (docs/multi_node.md)
            result = train_outside(
                config,
                place,
                sinks,
                resume_from=args.resume,
                overwrite_output_dir=args.overwrite,
                log=print,
            )
            if not place.is_main:
                return 0
        else:
            result = train(config, sink=sinks(), resume_from=args.resume, overwrite_output_dir=args.overwrite)
    finally:
        reporter.close()
    m = result.final_metrics
    print(
        f"{result.status}: {result.steps_done} steps, final reward {m.get('rollout/reward_mean', float('nan')):.3f}; "
        f"metrics and rollouts in {result.output_dir}"
    )
    return 0


class _Reporter:
    """``--report-to PROJECT``: the run sent to RLVR Studio with the ingest client (rlvr_client/native.py), from
    the process that records the run (global rank 0 under a launcher), so it appears in the dashboard."""

    def __init__(self, args: argparse.Namespace, config_dict: dict, max_steps: int) -> None:  # type: ignore[type-arg]
        self.args, self.config_dict, self.max_steps = args, config_dict, max_steps
        self.sink: Any = None

    def sinks(self) -> list[Any]:
        if not self.args.report_to:
            return []
        from rlvr_client import start_run
        from rlvr_client.native import IngestSink

        config_file = getattr(self.args, "config", None)
        name = self.args.report_name or (Path(config_file).stem if config_file else "demo")
        run = start_run(
            project=self.args.report_to,
            name=str(name),
            config=self.config_dict,
            source="script",
            source_info={"launcher": _launcher_name()},
            max_steps=self.max_steps,
        )
        print(f"reporting to RLVR Studio: {run.page_url or 'the run appears once the server answers'}")
        self.sink = IngestSink(run)
        return [self.sink]

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()


def _launcher_name() -> str:
    """What started this process, for the run page: Slurm, torchrun, or this shell."""
    if os.environ.get("SLURM_JOB_ID") and os.environ.get("TORCHELASTIC_RUN_ID"):
        return f"slurm job {os.environ['SLURM_JOB_ID']} (torchrun)"
    if os.environ.get("TORCHELASTIC_RUN_ID"):
        return "torchrun"
    return "rlvr train"


def _apply_override(config: dict, override: str) -> None:  # type: ignore[type-arg]
    """``--set training.max_steps=20``: dotted path = YAML value."""
    import yaml

    from trainer.errors import ConfigError

    if "=" not in override:
        raise ConfigError(f"--set expects section.field=value, got {override!r}")
    path, raw = override.split("=", 1)
    keys = path.split(".")
    node = config
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = yaml.safe_load(raw)


def _cmd_train(args: argparse.Namespace) -> int:
    import yaml

    from trainer.config import load_config

    load_config(args.config)  # validates and gives file-located errors before overrides
    data = yaml.safe_load(Path(args.config).read_text(encoding="utf-8")) or {}
    return _run_training(data, args, source=str(args.config))


def _cmd_demo(args: argparse.Namespace) -> int:
    from trainer.presets import preset

    data = preset("demo")
    print(
        "RLVR Studio demo: GRPO on a tiny model learning chain arithmetic with a scratchpad, a teacher "
        "scoring every token (CPU is fine)."
    )
    for name in (data["model"]["name_or_path"], data["teacher"]["name_or_path"]):
        _cmd_init_model(
            argparse.Namespace(model=name, teacher=False, force=False, sft_steps=None, build=False)
        )
    if not args.resume:
        args.overwrite = True  # the demo always starts over in its own directory
    if args.steps:
        data["training"]["max_steps"] = args.steps
    code = _run_training(data, args, source="preset demo")
    _report_demo_accuracy(data["evaluation"]["benchmarks"][0], data["checkpoint"]["output_dir"])
    return code


def _report_demo_accuracy(benchmark: str, output_dir: str) -> None:
    """The demo's headline from the run's own evaluations (its metrics.jsonl): greedy accuracy on the held-out
    problems before training (step 0) and after the last step."""
    from trainer.evaluation.config import GREEDY_ACCURACY
    from trainer.evaluation.suite import builtin_benchmark

    bench = builtin_benchmark(benchmark)
    key = f"eval/{bench.name}/{GREEDY_ACCURACY}"
    path = Path(output_dir) / "metrics.jsonl"
    rows = (
        [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if path.exists()
        else []
    )
    points = [(row["step"], row[key]) for row in rows if key in row]
    if len(points) < 2:
        return
    (first_step, first), (last_step, last) = points[0], points[-1]
    print(
        f"greedy accuracy on {bench.data.size} held-out problems: {first:.3f} at step {first_step} -> "
        f"{last:.3f} at step {last_step}"
    )


def _add_training_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--resume", metavar="DIR", help="continue from a checkpoint (a run directory or step-NNNNNN)"
    )
    p.add_argument("--output-dir", help="override checkpoint.output_dir")
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a field, e.g. training.max_steps=20"
    )
    p.add_argument("--log-every", type=int, default=10, help="print a summary line every N steps")
    p.add_argument(
        "--overwrite", action="store_true", help="delete checkpoints of an earlier run in the output dir"
    )
    p.add_argument(
        "--report-to",
        metavar="PROJECT",
        help="send the run to RLVR Studio project PROJECT (slug or id) with the ingest client, so it appears in "
        "the dashboard (server and token: $RLVR_URL / $RLVR_TOKEN or `rlvr login`)",
    )
    p.add_argument("--report-name", metavar="NAME", help="the run's name there (default: the config file's)")


def _cmd_export(args: argparse.Namespace) -> int:
    from trainer.models.checkpoint import resolve_checkpoint_dir
    from trainer.models.lora import merge_and_export

    out = merge_and_export(resolve_checkpoint_dir(args.checkpoint), args.out)
    print(f"merged model written to {out}")
    return 0


def _cmd_rollout_server(args: argparse.Namespace) -> int:
    from trainer.models.tiny_model import resolve_model_path
    from trainer.rollout.rollout_server import serve
    from trainer.rollout.server_process import parse_cpus
    from trainer.rollout.vllm_backends import vllm_engine_args

    engine_args = vllm_engine_args(
        resolve_model_path(args.model),
        dtype=args.dtype,
        seed=args.seed,
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_model_len=args.max_model_len,
        kv_cache_gb=args.kv_cache_gb,
    )
    if args.cpus:  # before vLLM starts its threads, which inherit the mask
        try:
            os.sched_setaffinity(0, parse_cpus(args.cpus))
        except OSError as err:
            raise ConfigError(
                f"--cpus {args.cpus}: this machine lets the server use {sorted(os.sched_getaffinity(0))} "
                f"({err.strerror})"
            ) from None
    serve(
        engine_args,
        Path(args.weights_root),
        args.host,
        args.port,
        Path(args.ready_file) if args.ready_file else None,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    from trainer.models.tiny_model import BUILT_IN_MODELS, DEMO_MODEL

    parser = argparse.ArgumentParser(
        prog="rlvr", description="RLVR Studio: RL with verifiable rewards for LMs."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train from a YAML/JSON experiment file")
    p.add_argument("config", help="experiment file (.yaml, .yml or .json)")
    _add_training_flags(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser(
        "demo", help="build the tiny models and train the student with GRPO and a teacher on chain arithmetic"
    )
    p.add_argument("--steps", type=int, default=0, help="training steps (default: the preset's)")
    _add_training_flags(p)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser(
        "init-model",
        help="place a built-in tiny model in the cache (the shipped weights, or built from its recipe)",
    )
    p.add_argument(
        "--model",
        default=DEMO_MODEL,
        choices=BUILT_IN_MODELS,
        help=f"which built-in model (default {DEMO_MODEL}, the demo's student)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="rebuild even if cached (only this model, not the one it starts from)",
    )
    p.add_argument(
        "--sft-steps", type=int, default=None, help="warm-start SFT steps (default: the model's recipe)"
    )
    p.add_argument(
        "--build",
        action="store_true",
        help="train it from its recipe on this machine instead of placing the weights shipped with RLVR Studio "
        "(a model it starts from too, if missing); other processors build slightly different weights",
    )
    p.add_argument(
        "--teacher",
        action="store_true",
        help="build the stronger teacher of --model for on-policy distillation instead (e.g. tiny:chain-teacher; "
        "a model it starts from is built first if missing)",
    )
    p.set_defaults(func=_cmd_init_model)

    p = sub.add_parser(
        "export", help="write a plain Hugging Face model from a checkpoint (merges LoRA adapters)"
    )
    p.add_argument(
        "checkpoint", help="a step-NNNNNN checkpoint directory or a run's output directory (latest)"
    )
    p.add_argument("out", help="directory to write the merged model to")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "rollout-server",
        help="serve generation with vLLM to training runs (rollout.vllm_mode: server); token in RLVR_ROLLOUT_TOKEN",
    )
    p.add_argument(
        "--model", required=True, help="the policy's initial weights: a local model directory or tiny:<name>"
    )
    p.add_argument(
        "--weights-root",
        required=True,
        help="the only directory new weights may be loaded from (runs write there)",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 in a container)"
    )
    p.add_argument("--port", type=int, default=8100, help="port (0: any free one, written to --ready-file)")
    p.add_argument("--ready-file", help="write the server's URL here once it serves")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=0.3,
        help="share of GPU memory (CPU: of RAM) vLLM may take (default 0.3)",
    )
    p.add_argument("--max-model-len", type=int, default=None, help="context length (default: the model's)")
    p.add_argument(
        "--cpus",
        default=None,
        help="CPU cores the server may use, e.g. 1 or 4-7 (generation apart from training on a CPU host)",
    )
    p.add_argument(
        "--kv-cache-gb",
        type=float,
        default=None,
        help="GiB for the KV cache (default: the utilization share on a GPU, 1 GiB on the CPU)",
    )
    p.set_defaults(func=_cmd_rollout_server)

    from trainer.evaluation.cli import add_eval_parser

    add_eval_parser(sub)  # rlvr eval (trainer/evaluation/cli.py)

    from trainer.rewards.train_rm_cli import add_train_rm_parser

    add_train_rm_parser(sub)  # rlvr train-rm (trainer/rewards/train_rm_cli.py)

    from trainer.process.train_prm_cli import add_train_prm_parser

    add_train_prm_parser(sub)  # rlvr train-prm (trainer/process/train_prm_cli.py)

    p = sub.add_parser("config-schema", help="print the experiment config's JSON schema")
    p.set_defaults(func=_cmd_config_schema)

    p = sub.add_parser("methods", help="list every training method by the config field that chooses it")
    p.set_defaults(func=_cmd_methods)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except RLVRError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; resume with --resume <output_dir>", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
