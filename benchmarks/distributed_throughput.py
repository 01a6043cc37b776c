"""Data-parallel throughput on CPU: 1 process against N processes (torchrun, gloo) on the same global batch.

    .venv/bin/python benchmarks/distributed_throughput.py                  # 1 vs 2 processes, 30 steps each
    .venv/bin/python benchmarks/distributed_throughput.py --steps 10 --out /tmp/quick.json

Both runs train the built-in warm-started tiny model (`tiny:addition`) on the demo addition task with the
same config except ``training.num_processes`` (and ``rollout.seed_per_prompt`` on for both, which N > 1
forces, so both sample the same completions). A third run shows what per-prompt seeding itself costs: one
process with ``seed_per_prompt`` off (the default, one batched generation call a step). Steady-state speed is measured between the first and the last
step report the caller's sink receives (the N-process launcher relays them within ~0.2 s), so process
start-up is reported separately. Each process uses one torch thread (OMP_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from trainer.config import config_from_dict
from trainer.sinks import NullSink, StepReport
from trainer.step.loop import train


class _Timer(NullSink):
    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.tokens: list[float] = []

    def on_step(self, report: StepReport) -> None:
        self.arrivals.append(time.perf_counter())
        self.tokens.append(sum(len(r.token_ids) for r in report.rollouts))


def run_once(
    processes: int,
    steps: int,
    prompts: int,
    generations: int,
    new_tokens: int,
    out_dir: Path,
    seed_per_prompt: bool = True,
) -> dict[str, Any]:
    config = config_from_dict(
        {
            "name": f"dist-bench-{processes}",
            "seed": 0,
            "model": {"name_or_path": "tiny:addition"},
            "data": {"source": "demo", "size": 256},
            "rollout": {
                "num_generations": generations,
                "max_completion_length": new_tokens,
                "seed_per_prompt": seed_per_prompt,
            },
            "verifiers": [{"name": "exact"}],
            "training": {
                "max_steps": steps,
                "prompts_per_step": prompts,
                "micro_batch_size": 32,
                "learning_rate": 1e-4,
                "num_processes": processes,
            },
            "checkpoint": {"output_dir": str(out_dir), "save_steps": 0},
        }
    )
    timer = _Timer()
    torch_threads = int(os.environ["OMP_NUM_THREADS"])
    import torch

    torch.set_num_threads(torch_threads)
    t0 = time.perf_counter()
    train(config, timer, log=lambda msg: None, overwrite_output_dir=True)
    total = time.perf_counter() - t0
    window = timer.arrivals[-1] - timer.arrivals[0]
    steady_steps = len(timer.arrivals) - 1
    return {
        "processes": processes,
        "seed_per_prompt": seed_per_prompt,
        "steps": steps,
        "total_s": total,
        "startup_s": timer.arrivals[0] - t0,  # launch, model load, and the first step
        "steps_per_s": steady_steps / window if window > 0 else float("nan"),
        "gen_tokens_per_s": sum(timer.tokens[1:]) / window if window > 0 else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step (global batch)")
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument(
        "--out", default=str(Path(__file__).resolve().parent / "results" / "distributed_throughput.json")
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, per_prompt in ((1, True), (args.processes, True), (1, False)):
            out = Path(tmp) / f"p{n}-{per_prompt}"
            results.append(
                run_once(n, args.steps, args.prompts, args.generations, args.new_tokens, out, per_prompt)
            )
            r = results[-1]
            print(
                f"{n} process(es), seed_per_prompt {per_prompt}: {r['steps_per_s']:.2f} steps/s, "
                f"{r['gen_tokens_per_s']:.0f} generated tokens/s (steady state), start-up + first step "
                f"{r['startup_s']:.1f} s, total {r['total_s']:.1f} s"
            )
    speedup = results[1]["steps_per_s"] / results[0]["steps_per_s"]
    print(f"speed-up of {args.processes} processes: {speedup:.2f}x")
    payload = {
        "settings": {
            "steps": args.steps,
            "prompts_per_step": args.prompts,
            "num_generations": args.generations,
            "max_completion_length": args.new_tokens,
            "threads_per_process": int(os.environ["OMP_NUM_THREADS"]),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_before": load_before,
            "load_avg_after": os.getloadavg(),
            "python": platform.python_version(),
        },
        "results": results,
        "speedup_steps_per_s": speedup,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
