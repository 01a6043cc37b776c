"""The GPU path on a CUDA machine (issue 8): the tiny model's GRPO run with the hf engine in float32, bf16 autocast
and bf16 weights, and ``training.memory_budget_gb`` honoured by a larger randomly initialised model.

    python -m benchmarks.gpu_check --out benchmarks/results/gpu_check.json     # needs a CUDA GPU, ~3 min on an H200

Part 1 trains ``tiny:addition`` on the demo task (the demo preset on ``cuda``) and reports steps/s, generated and
trained tokens/s, the allocator's peak memory, the reward of the first and last 20 steps and greedy accuracy on
200 held-out additions before and after. Part 2 builds a ~200M-parameter Qwen2 with random weights (it never
says EOS, so every completion runs to ``max_completion_length``: the worst case for memory) and runs a few steps
under two budgets, with gradient checkpointing, and without a budget, reporting the planned micro-batch and
generation-batch sizes against the measured peak. Nothing is downloaded: the tiny model is built locally
(`rlvr init-model`) and the larger one from a config.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.config import config_from_dict, load_config
from trainer.sinks import NullSink, StepReport
from trainer.step.loop import train


class _Steps(NullSink):
    def __init__(self) -> None:
        self.metrics: list[dict[str, float]] = []
        self.times: list[float] = []
        self.logs: list[str] = []

    def on_step(self, report: StepReport) -> None:
        self.metrics.append(report.metrics)
        self.times.append(time.perf_counter())


def _mean(rows: list[dict[str, float]], key: str) -> float:
    values = [r[key] for r in rows if key in r]
    return sum(values) / len(values) if values else float("nan")


def _greedy_accuracy(model_dir: str | Path) -> float:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.tiny_model import greedy_addition_accuracy

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return greedy_addition_accuracy(model, AutoTokenizer.from_pretrained(model_dir), n=200)


def tiny_runs(work: Path, steps: int, device: str) -> dict[str, Any]:
    from trainer.models.checkpoint import latest_checkpoint
    from trainer.models.tiny_model import resolve_model_path

    base = load_config(Path(__file__).resolve().parent.parent / "trainer" / "presets" / "demo.yaml")
    results: dict[str, Any] = {"base_greedy_accuracy": _greedy_accuracy(resolve_model_path("tiny:addition"))}
    variants = {
        "float32": {"dtype": "float32"},
        "bf16_autocast": {"dtype": "float32", "autocast_bf16": True},
        "bf16_weights": {"dtype": "bfloat16"},
    }
    for name, model_fields in variants.items():
        data = base.model_dump(mode="json")
        data["model"].update({"device": device, **model_fields})
        data["training"]["max_steps"] = steps
        data["checkpoint"].update({"output_dir": str(work / name), "save_steps": 0})
        sink = _Steps()
        t0 = time.perf_counter()
        train(config_from_dict(data), sink, log=sink.logs.append)
        wall = time.perf_counter() - t0
        m = sink.metrics
        steady = (
            (len(sink.times) - 1) / (sink.times[-1] - sink.times[0]) if len(sink.times) > 1 else float("nan")
        )
        ckpt = latest_checkpoint(work / name)
        results[name] = {
            "steps": steps,
            "wall_s": wall,
            "steps_per_s_steady": steady,
            "gen_tokens_per_s": _mean(m[5:], "perf/gen_tokens_per_s"),
            "train_tokens_per_s": _mean(m[5:], "perf/train_tokens_per_s"),
            "peak_memory_gb_max": max(r["perf/peak_memory_gb"] for r in m),
            "reward_first20": _mean(m[:20], "rollout/reward_mean"),
            "reward_last20": _mean(m[-20:], "rollout/reward_mean"),
            "greedy_accuracy_after": _greedy_accuracy(ckpt) if ckpt else float("nan"),
        }
        print(name, json.dumps(results[name]), flush=True)
    return results


def budget_runs(work: Path, steps: int, device: str, small: bool) -> dict[str, Any]:
    from trainer.models.tiny_model import build_tiny_model

    size = {"hidden": 64, "layers": 2, "heads": 2} if small else {"hidden": 1024, "layers": 12, "heads": 16}
    model_dir = build_tiny_model(work / "random-model", **size)
    n_params = sum(
        p.numel()
        for p in __import__("transformers").AutoModelForCausalLM.from_pretrained(model_dir).parameters()
    )
    base: dict[str, Any] = {
        "name": "gpu-budget",
        "seed": 0,
        "model": {"name_or_path": str(model_dir), "device": device, "dtype": "bfloat16"},
        "data": {"source": "demo", "size": 256},
        "rollout": {
            "num_generations": 8,
            "max_completion_length": 16 if small else 256,
            "generation_batch_size": 1024,
        },
        "verifiers": [{"name": "regex_format", "params": {"pattern": "[0-9]", "match": "search"}}],
        "training": {
            "max_steps": steps,
            "prompts_per_step": 16,
            "micro_batch_size": 128,
            "learning_rate": 1e-5,
        },
        "checkpoint": {"save_steps": 0},
    }
    cases = {
        "no_budget": {},
        "budget_6gb": {"training": {"memory_budget_gb": 6.0}},
        "budget_3gb": {"training": {"memory_budget_gb": 3.0}},
        "budget_3gb_checkpointing": {
            "training": {"memory_budget_gb": 3.0},
            "model": {"gradient_checkpointing": True},
        },
    }
    results: dict[str, Any] = {"parameters": n_params}
    for name, override in cases.items():
        data = json.loads(json.dumps(base))
        for section, values in override.items():
            data[section].update(values)
        data["checkpoint"]["output_dir"] = str(work / name)
        sink = _Steps()
        t0 = time.perf_counter()
        train(config_from_dict(data), sink, log=sink.logs.append)
        m = sink.metrics
        results[name] = {
            "budget_gb": data["training"].get("memory_budget_gb"),
            "plan": [line for line in sink.logs if line.startswith("memory plan")],
            "micro_batch_size": m[-1].get("perf/micro_batch_size", 128.0),
            "generation_batch_size": m[-1].get("perf/generation_batch_size", 1024.0),
            "peak_memory_gb_per_step": [r["perf/peak_memory_gb"] for r in m],
            "gen_peak_memory_gb_per_step": [r["perf/gen_peak_memory_gb"] for r in m],
            "update_peak_memory_gb_per_step": [r["perf/update_peak_memory_gb"] for r in m],
            "step_s_mean": _mean(m, "perf/step_s"),
            "gen_tokens_per_s": _mean(m, "perf/gen_tokens_per_s"),
            "train_tokens_per_s": _mean(m, "perf/train_tokens_per_s"),
            "response_len_mean": _mean(m, "rollout/response_len_mean"),
            "wall_s": time.perf_counter() - t0,
        }
        budget = results[name]["budget_gb"]
        results[name]["within_budget"] = (
            None if budget is None else max(results[name]["peak_memory_gb_per_step"]) <= budget
        )
        print(name, json.dumps(results[name]), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="benchmarks/results/gpu_check.json")
    parser.add_argument("--tiny-steps", type=int, default=120)
    parser.add_argument("--budget-steps", type=int, default=3)
    parser.add_argument("--skip-budget", action="store_true")
    parser.add_argument(
        "--dry-run", action="store_true", help="check the script on CPU: few steps, a tiny budget model"
    )
    args = parser.parse_args(argv)
    device = "cpu" if args.dry_run else "cuda"
    if args.dry_run:
        args.tiny_steps, args.budget_steps = 6, 1
    elif not torch.cuda.is_available():
        print("gpu_check needs a CUDA GPU (none is visible)", file=sys.stderr)
        return 2
    import transformers

    result: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else "none (dry run)",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        result["tiny"] = tiny_runs(Path(tmp) / "tiny", args.tiny_steps, device)
        if not args.skip_budget:
            result["budget"] = budget_runs(
                Path(tmp) / "budget", args.budget_steps, device, small=args.dry_run
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
