"""Synchronous vs asynchronous training, and the vLLM engine vs the hf engine, on this machine's CPUs.

Two tables, written to benchmarks/results/async_vllm.md (headed by the code revision and the model hashes):

1. **Training**: the addition preset (tiny:addition, 8 prompts x 8 completions) for ``--steps`` steps, for
   each engine (``hf``; ``vllm`` through a rollout server in .venv-vllm) and each mode (synchronous;
   ``training.max_off_policy_steps`` 1), 3 seeds; the vLLM runs both with the two sides sharing both cores and
   with generation on a core of its own (``RLVR_ROLLOUT_SERVER_CPUS``: the placement asynchronous RL is for,
   as with a rollout GPU beside a training GPU). Seconds per step is the median interval between step ends
   after 5 warm-up steps; reward is the mean sampled reward of the first and last 10 steps (equal steps, so
   equal data). Each run is its own subprocess; runs alternate between configurations so that load drift hits
   them alike.
2. **Generation**: completions tokens/s of vLLM (the CPU build, in-process in .venv-vllm) and of the hf engine
   on the same prompts, for the tiny model and a ~30M-parameter Qwen2 model built here with random weights
   (hidden 512, 8 layers; nothing is downloaded). 64 prompts x ``--gen-tokens`` tokens, sampling at
   temperature 1, best of 3 timed repetitions after one warm-up.

    .venv/bin/python benchmarks/async_vllm.py               # about 15 minutes on 2 cores
    .venv/bin/python benchmarks/async_vllm.py --steps 20 --seeds 1   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "async_vllm.md"
# (engine, max_off_policy_steps, placement): 'shared' lets both sides use both cores; 'split' puts the trainer on
# core 0 (one thread) and the rollout server on core 1 (RLVR_ROLLOUT_SERVER_CPUS), as separate GPUs would.
CONFIGS = [
    ("hf", 0, "shared"),
    ("hf", 1, "shared"),
    ("vllm", 0, "shared"),
    ("vllm", 1, "shared"),
    ("vllm", 0, "split"),
    ("vllm", 1, "split"),
]
WARMUP = 5


def revision() -> str:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return sha + ("+uncommitted" if dirty else "")


def weights_hash(model_dir: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(model_dir.glob("*.safetensors")):
        digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


# --- children -----------------------------------------------------------------------------------------------


def train_child(engine: str, k: int, seed: int, steps: int, placement: str) -> dict[str, Any]:
    import os

    import torch

    if placement == "split":
        os.sched_setaffinity(0, {0})
        os.environ["RLVR_ROLLOUT_SERVER_CPUS"] = "1"
        torch.set_num_threads(1)
    from trainer.config import config_from_dict
    from trainer.presets import preset
    from trainer.sinks import NullSink, StepReport
    from trainer.step.loop import train

    data = preset("addition")
    data["seed"] = seed
    data["training"].update({"max_steps": steps, "max_off_policy_steps": k})
    if engine == "vllm":
        data["rollout"].update(
            {"engine": "vllm", "vllm_mode": "server", "vllm_max_model_len": 128, "vllm_kv_cache_gb": 0.25}
        )

    class Keep(NullSink):
        def __init__(self) -> None:
            self.ends: list[float] = []
            self.rewards: list[float] = []
            self.metrics: list[dict[str, float]] = []

        def on_step(self, report: StepReport) -> None:
            self.ends.append(time.perf_counter())
            self.rewards.append(report.metrics["rollout/reward_mean"])
            self.metrics.append(report.metrics)

    keep = Keep()
    with tempfile.TemporaryDirectory(prefix="async-bench-") as out:
        data["checkpoint"] = {"output_dir": out, "save_steps": 0}
        train(config_from_dict(data), sink=keep, log=lambda _: None)
    gaps = [b - a for a, b in zip(keep.ends[WARMUP:], keep.ends[WARMUP + 1 :], strict=False)]
    last = keep.metrics[WARMUP:]
    mean = lambda key: statistics.fmean(m.get(key, 0.0) for m in last)  # noqa: E731
    return {
        "s_per_step": statistics.median(gaps),
        "reward_first10": statistics.fmean(keep.rewards[:10]),
        "reward_last10": statistics.fmean(keep.rewards[-10:]),
        "trainer_idle_s": mean("async/trainer_idle_s"),
        "generator_idle_s": mean("async/generator_idle_s"),
        "kl": mean("async/sampler_trainer_kl"),
        "is_clipped": mean("async/is_clipped_frac"),
    }


def gen_child(engine: str, model_dir: str, tokens: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.rollout import HFRolloutEngine, SamplingParams

    tok = AutoTokenizer.from_pretrained(model_dir)
    prompts = [f"{a}+{b}=" for a in range(8) for b in range(8)]  # 64 distinct prompts
    params = SamplingParams(max_new_tokens=tokens, temperature=1.0, batch_size=64)
    if engine == "hf":
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        gen = HFRolloutEngine(model, tok)

        def run(seed: int) -> int:
            return int(
                gen.generate(prompts, params, torch.Generator().manual_seed(seed)).completion_mask.sum()
            )
    else:
        from trainer.rollout.vllm_backends import LocalVLLM, vllm_engine_args
        from trainer.rollout.vllm_engine import to_vllm_sampling_kwargs

        backend = LocalVLLM(
            vllm_engine_args(
                model_dir,
                dtype="float32",
                seed=0,
                gpu_memory_utilization=0.3,
                max_model_len=512,
                kv_cache_gb=0.5,
            )
        )
        ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]

        def run(seed: int) -> int:
            rows = backend.generate(
                ids, [to_vllm_sampling_kwargs(params, 1, seed + i) for i in range(len(ids))]
            )
            return sum(len(r.completion_ids) for r in rows)

    run(0)  # warm-up
    best = 0.0
    for rep in range(3):
        t0 = time.perf_counter()
        n = run(rep + 1)
        best = max(best, n / (time.perf_counter() - t0))
    return {"tokens_per_s": best, "tokens": n}


# --- driver -------------------------------------------------------------------------------------------------


def _child(python: str, args: list[str], threads: int = 2) -> dict[str, Any]:
    env_threads = {"OMP_NUM_THREADS": str(threads)}
    import os

    done = subprocess.run(
        [python, __file__, "--child", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **env_threads},
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def parameter_count(model_dir: Path) -> int:
    from safetensors import safe_open

    total = 0
    for f in model_dir.glob("*.safetensors"):
        with safe_open(str(f), "pt") as st:
            total += sum(
                st.get_slice(k).get_shape().numel()
                if hasattr(st.get_slice(k).get_shape(), "numel")
                else _numel(st.get_slice(k).get_shape())
                for k in st.keys()  # noqa: SIM118 (safe_open is no dict)
            )
    return total


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def build_medium_model(root: Path) -> Path:
    from trainer.models.tiny_model import build_tiny_model

    path = root / "qwen2-40m"
    if not (path / "model.safetensors").exists():
        build_tiny_model(path, hidden=512, layers=8, heads=8)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "train":
            out = train_child(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4])
        else:
            out = gen_child(rest[0], rest[1], int(rest[2]))
        print(json.dumps(out))
        return

    from trainer.models.tiny_model import ensure_tiny_model, rlvr_home
    from trainer.rollout.server_process import vllm_python

    tiny = ensure_tiny_model(log=lambda m: None)
    medium = build_medium_model(rlvr_home() / "bench-models")
    lines = [
        f"# Asynchronous training and the vLLM engine on {sys.platform} CPUs",
        "",
        f"Code revision `{revision()}`; `benchmarks/async_vllm.py`. tiny:addition `{weights_hash(tiny)}`, "
        f"medium Qwen2 (random weights) `{weights_hash(medium)}`.",
        "",
    ]

    if not args.skip_training:
        results: dict[tuple[str, int, str], list[dict[str, Any]]] = {c: [] for c in CONFIGS}
        for seed in range(args.seeds):
            for engine, k, placement in CONFIGS:  # alternate configurations within each seed
                r = _child(sys.executable, ["train", engine, str(k), str(seed), str(args.steps), placement])
                results[engine, k, placement].append(r)
                print(engine, k, placement, seed, r, flush=True)
        lines += [
            f"## Training: addition preset, {args.steps} steps, {args.seeds} seeds",
            "",
            "Placement 'shared': trainer and generator both use both cores; 'split': the trainer on core 0 "
            "(one thread), the rollout server on core 1.",
            "",
            "| engine | placement | mode | s/step (median over seeds) | steps/s vs sync | reward first 10 -> last 10 | "
            "trainer idle s/step | generator idle s/step | sampler-trainer KL |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for engine, k, placement in CONFIGS:
            rs = results[engine, k, placement]
            sync = statistics.median(x["s_per_step"] for x in results[engine, 0, placement])
            sps = statistics.median(x["s_per_step"] for x in rs)
            mode = "sync" if k == 0 else f"async (max_off_policy_steps {k})"
            lines.append(
                f"| {engine} | {placement} | {mode} | {sps:.3f} | {sync / sps:.2f}x | "
                f"{statistics.fmean(x['reward_first10'] for x in rs):.3f} -> {statistics.fmean(x['reward_last10'] for x in rs):.3f} | "
                f"{statistics.fmean(x['trainer_idle_s'] for x in rs):.3f} | {statistics.fmean(x['generator_idle_s'] for x in rs):.3f} | "
                f"{statistics.fmean(x['kl'] for x in rs):.2e} |"
            )
        lines.append("")

    lines += [
        f"## Generation: 64 prompts x {args.gen_tokens} new tokens, temperature 1",
        "",
        "| model | parameters | hf tokens/s | vLLM tokens/s | vLLM / hf |",
        "|---|---|---|---|---|",
    ]
    for label, model in [("tiny:addition", tiny), ("Qwen2 hidden 512 x 8 layers", medium)]:
        params = f"{parameter_count(model) / 1e6:.1f}M"
        hf = _child(sys.executable, ["gen", "hf", str(model), str(args.gen_tokens)])
        vl = _child(vllm_python(), ["gen", "vllm", str(model), str(args.gen_tokens)])
        lines.append(
            f"| {label} | {params} | {hf['tokens_per_s']:.0f} | {vl['tokens_per_s']:.0f} | "
            f"{vl['tokens_per_s'] / hf['tokens_per_s']:.2f}x |"
        )
        print(label, hf, vl, flush=True)
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
