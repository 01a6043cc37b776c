"""TRL's GRPOTrainer and our ``rlvr`` trainer side by side: same tiny model, data, seed and settings.

Both tools train the built-in warm-started tiny model (``trainer.models.tiny_model``) on the same 256 two-digit
addition prompts with the same objective: 4 prompts x 8 generations = 32 completions a step, 8 new
tokens, temperature 1, beta 0, lr 1e-4, DAPO token normalisation, PPO clip epsilon 0.2 on both sides,
reward 1 when the first line of the completion equals the answer. Four tools run per seed:

- ``trl``: TRL computing what rlvr computes (float32, constant learning rate, no activation checkpointing);
- ``trl-defaults``: TRL's GRPOConfig defaults for everything but the task (model, data, reward, 4 x 8
  completions a step, 8 new tokens, steps, seed): what a user gets out of the box (bf16 autocast, lr 1e-6
  decayed linearly, activation checkpointing);
- ``rlvr``: the synchronous step; ``rlvr-async``: the same config with ``RLVR_ASYNC`` applied (below).

Runs alternate (each seed runs every tool, in an order rotated by the seed) so that load drift on a shared
machine hits all tools alike; each run is its own subprocess with a fixed number of torch threads. Every
figure is a ratio of runs made in this invocation: speed-ups are per-seed ratios of seconds per step (their
geometric mean), the reward difference is paired by seed (mean of the last 10 steps' reward, rlvr minus TRL)
with a 95% Student-t interval over the seeds.

Seconds per step is the wall-clock interval between the ends of consecutive steps (everything a step
costs: data, generation, reward, update, logging), median over the steps after the warm-up ones. Each
tool's own inner step time (TRL: ``on_step_begin`` -> ``on_step_end``; rlvr: ``perf/step_s``) is kept
in the JSON too.

    python benchmarks/vs_trl.py                       # 5 seeds x 150 steps x 4 tools, about 6 minutes on 2 cores
    python benchmarks/vs_trl.py --steps 20 --seeds 2 --tools trl rlvr   # a quick look
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's trainer and benchmarks, whatever is installed
DEFAULT_OUT = REPO / "benchmarks" / "results" / "vs_trl.json"
TOOLS = ("trl", "trl-defaults", "rlvr", "rlvr-async")
TARGET_SPEEDUP = 1.5  # the project's goal: rlvr >= 1.5x TRL's steps/s at a reward not worse than TRL's

# The asynchronous tool: the synchronous config with these sections merged in (the one place to adjust it).
RLVR_ASYNC: dict[str, dict[str, Any]] = {
    "training": {"max_off_policy_steps": 1},  # generation of step s+1 overlaps the update of step s
}


@dataclass(frozen=True)
class Settings:
    """One comparison's settings; the shared ones are named as in TRL's GRPOConfig."""

    steps: int = 150
    num_generations: int = 8
    prompts_per_step: int = 4
    max_completion_length: int = 8
    temperature: float = 1.0
    beta: float = 0.0
    learning_rate: float = 1e-4
    loss_type: str = "dapo"
    epsilon: float = 0.2
    num_prompts: int = 256
    data_seed: int = 0
    threads: int = 2
    warmup_steps: int = 2

    @property
    def completions_per_step(self) -> int:
        return self.prompts_per_step * self.num_generations


# --- one run (runs inside the child process) -------------------------------------------------------


def _step_seconds(ends: list[float], start: float) -> list[float]:
    """Per-step wall time from the step-end timestamps; step 1 is timed from the start of training."""
    return [b - a for a, b in zip([start, *ends[:-1]], ends, strict=True)]


def run_trl(model_dir: str, seed: int, s: Settings, work_dir: str, defaults: bool = False) -> dict[str, Any]:
    """TRL's GRPOTrainer; ``defaults``: GRPOConfig's defaults for everything but the task (module docstring)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from trainer.data.demo_task import demo_samples
    from trainer.samples import Sample
    from trainer.verifiers.exact import ExactParams, ExactVerifier

    rows = [{"prompt": x.prompt, "answer": x.answer} for x in demo_samples(s.num_prompts, s.data_seed)]
    # rlvr's own `exact` verifier with the same parameters, so that both tools score completions identically.
    verifier = ExactVerifier(ExactParams(extract="first_line"))

    def first_line_exact(completions: list[str], answer: list[str], **_: Any) -> list[float | None]:
        samples = [Sample(id=str(i), prompt="", answer=a) for i, a in enumerate(answer)]
        return [r.reward for r in verifier(completions, samples)]

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.begins: list[float] = []
            self.ends: list[float] = []
            self.cpu_ends: list[float] = []

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.begins.append(time.perf_counter())

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.ends.append(time.perf_counter())
            self.cpu_ends.append(time.process_time())

    task: dict[str, Any] = {  # forced equal in both TRL tools: the task, its size, the seed, the machine
        "output_dir": work_dir,
        "use_cpu": True,
        "report_to": [],
        "save_strategy": "no",
        "disable_tqdm": True,
        "seed": seed,
        "max_steps": s.steps,
        "per_device_train_batch_size": s.completions_per_step,
        "num_generations": s.num_generations,
        "max_completion_length": s.max_completion_length,
        "logging_steps": 1,  # every step's reward for the comparison (TRL logs every 10th by default)
    }
    same_compute: dict[str, Any] = {
        "temperature": s.temperature,
        "beta": s.beta,
        "learning_rate": s.learning_rate,
        "loss_type": s.loss_type,
        "epsilon": s.epsilon,
        # TRL's defaults that would make it compute something else than rlvr: on CPU it autocasts to bf16,
        # and it decays the learning rate linearly to 0; rlvr trains in float32 at a constant rate.
        "bf16": False,
        "lr_scheduler_type": "constant",
        # TRL checkpoints activations by default (recomputes the forward in backward: less memory, more
        # compute); rlvr does not.
        "gradient_checkpointing": False,
    }
    config = GRPOConfig(**task, **({} if defaults else same_compute))
    clock = StepClock()
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=first_line_exact,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        callbacks=[clock],
    )
    start, cpu_start = time.perf_counter(), time.process_time()
    trainer.train()
    rewards = [float(h["reward"]) for h in trainer.state.log_history if "reward" in h]
    return {
        "step_s": _step_seconds(clock.ends, start),
        "cpu_step_s": _step_seconds(clock.cpu_ends, cpu_start),
        "inner_step_s": [b - a for a, b in zip(clock.begins, clock.ends, strict=True)],
        "reward": rewards,
    }


def rlvr_config(model_dir: str, seed: int, s: Settings, work_dir: str, asynchronous: bool) -> dict[str, Any]:
    """The rlvr config of the comparison; ``asynchronous`` merges in ``RLVR_ASYNC``."""
    config: dict[str, Any] = {
        "name": f"vs-trl-seed{seed}",
        "seed": seed,
        "model": {"name_or_path": model_dir, "device": "cpu"},
        "data": {"source": "demo", "size": s.num_prompts, "data_seed": s.data_seed},
        "rollout": {
            "num_generations": s.num_generations,
            "max_completion_length": s.max_completion_length,
            "temperature": s.temperature,
        },
        "verifiers": [{"name": "exact", "params": {"extract": "first_line"}}],
        "algorithm": {
            "loss_type": s.loss_type,
            "epsilon": s.epsilon,
            "epsilon_high": None,
            "beta": s.beta,
        },
        "training": {
            "max_steps": s.steps,
            "prompts_per_step": s.prompts_per_step,
            "learning_rate": s.learning_rate,
        },
        "checkpoint": {"output_dir": work_dir, "save_steps": 0},
    }
    if asynchronous:
        for section, values in RLVR_ASYNC.items():
            config[section] = {**config.get(section, {}), **values}
    return config


def run_rlvr(
    model_dir: str, seed: int, s: Settings, work_dir: str, asynchronous: bool = False
) -> dict[str, Any]:
    from trainer.config import config_from_dict
    from trainer.sinks import NullSink, StepReport
    from trainer.step.loop import train

    config = config_from_dict(rlvr_config(model_dir, seed, s, work_dir, asynchronous))

    class Collect(NullSink):
        def __init__(self) -> None:
            self.ends: list[float] = []
            self.cpu_ends: list[float] = []
            self.inner: list[float] = []
            self.rewards: list[float] = []

        def on_step(self, report: StepReport) -> None:
            self.ends.append(time.perf_counter())
            self.cpu_ends.append(time.process_time())
            self.inner.append(report.metrics["perf/step_s"])
            self.rewards.append(report.metrics["rollout/reward_mean"])

    sink = Collect()
    start, cpu_start = time.perf_counter(), time.process_time()
    train(config, sink=sink, log=lambda _: None)  # its final checkpoint comes after the last step end
    return {
        "step_s": _step_seconds(sink.ends, start),
        "cpu_step_s": _step_seconds(sink.cpu_ends, cpu_start),
        "inner_step_s": sink.inner,
        "reward": sink.rewards,
    }


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(steps=args.steps, threads=args.threads, warmup_steps=args.warmup)


def child_main(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    s = _settings(args)
    with tempfile.TemporaryDirectory(prefix=f"vs-trl-{args.child}-") as work_dir:
        if args.child.startswith("trl"):
            result = run_trl(args.model_dir, args.seed, s, work_dir, defaults=args.child == "trl-defaults")
        else:
            result = run_rlvr(args.model_dir, args.seed, s, work_dir, asynchronous=args.child == "rlvr-async")
    result["torch_threads"] = torch.get_num_threads()
    Path(args.result).write_text(json.dumps(result))


# --- the driver (parent process) --------------------------------------------------------------------


def _summary(run: dict[str, Any], warmup: int) -> dict[str, float]:
    steps, rewards = run["step_s"], run["reward"]
    timed = steps[warmup:] or steps
    n = min(10, len(rewards))
    return {
        "s_per_step": statistics.median(timed),
        # CPU seconds of the process (all its threads) per step: less sensitive than wall time to other
        # processes competing for the cores
        "cpu_s_per_step": statistics.median(run["cpu_step_s"][warmup:] or run["cpu_step_s"]),
        "inner_s_per_step": statistics.median(run["inner_step_s"][warmup:] or run["inner_step_s"]),
        "reward_first10": sum(rewards[:n]) / n,
        "reward_last10": sum(rewards[-n:]) / n,
        "total_s": sum(steps),
    }


def _machine_cpu_s() -> float:
    """CPU seconds all processes have used since boot (Linux /proc/stat; NaN elsewhere)."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except OSError:
        return float("nan")
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait


def _busy_cores(seconds: float = 2.0) -> float:
    """How many cores the machine keeps busy right now (sampled over ``seconds``)."""
    busy0, t0 = _machine_cpu_s(), time.perf_counter()
    time.sleep(seconds)
    return (_machine_cpu_s() - busy0) / (time.perf_counter() - t0)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _launch(tool: str, seed: int, args: argparse.Namespace, model_dir: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(args.threads),
        "MKL_NUM_THREADS": str(args.threads),
        "TOKENIZERS_PARALLELISM": "false",
        "WANDB_DISABLED": "true",
    }
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        result_path = f.name
    cmd = [
        sys.executable,
        __file__,
        "--child",
        tool,
        "--seed",
        str(seed),
        "--steps",
        str(args.steps),
        "--threads",
        str(args.threads),
        "--model-dir",
        model_dir,
        "--result",
        result_path,
    ]
    load_before = os.getloadavg()
    busy0, child0, t0 = _machine_cpu_s(), _children_cpu_s(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    # CPU the rest of the machine used meanwhile, in cores: the load average counts our own run too.
    other_cores = (_machine_cpu_s() - busy0 - (_children_cpu_s() - child0)) / wall
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{tool} seed {seed} failed with exit code {proc.returncode}")
    run: dict[str, Any] = json.loads(Path(result_path).read_text())
    Path(result_path).unlink()
    run.update(
        tool=tool,
        seed=seed,
        wall_s=wall,
        other_cores=other_cores,
        load_before=load_before,
        load_after=os.getloadavg(),
    )
    run["summary"] = _summary(run, args.warmup)
    return run


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _speedup(
    by: dict[tuple[str, int], dict[str, float]], base: str, tool: str, seeds: list[int]
) -> dict[str, Any]:
    """``tool``'s steps/s over ``base``'s: per seed (runs made next to each other) and their geometric mean."""
    per_seed = [by[base, seed]["s_per_step"] / by[tool, seed]["s_per_step"] for seed in seeds]
    inner = [by[base, seed]["inner_s_per_step"] / by[tool, seed]["inner_s_per_step"] for seed in seeds]
    cpu = [by[base, seed]["cpu_s_per_step"] / by[tool, seed]["cpu_s_per_step"] for seed in seeds]
    return {
        "ratio": _geomean(per_seed),
        "per_seed": per_seed,
        "min": min(per_seed),
        "max": max(per_seed),
        "inner_ratio": _geomean(inner),
        "cpu_ratio": _geomean(cpu),  # CPU seconds per step (see _summary)
    }


def _reward_diff(
    by: dict[tuple[str, int], dict[str, float]], base: str, tool: str, seeds: list[int]
) -> dict[str, Any]:
    """Last-10 reward of ``tool`` minus ``base``'s, paired by seed, with its 95% interval (Student's t)."""
    from benchmarks.reproduce.stats import paired

    p = paired([by[tool, s]["reward_last10"] for s in seeds], [by[base, s]["reward_last10"] for s in seeds])
    return {
        "diff": p.effect,
        "ci95": [p.ci_low, p.ci_high],
        "sd": p.sd,
        "n": p.n,
        "per_seed": [by[tool, s]["reward_last10"] - by[base, s]["reward_last10"] for s in seeds],
    }


def _table(runs: list[dict[str, Any]], seeds: list[int], tools: list[str]) -> tuple[str, dict[str, Any]]:
    by = {(r["tool"], r["seed"]): r["summary"] for r in runs}
    keys = ("s_per_step", "inner_s_per_step", "reward_first10", "reward_last10")
    mean = {t: {k: statistics.fmean(by[t, seed][k] for seed in seeds) for k in keys} for t in tools}
    head = (
        f"{'seed':>6} | "
        + " ".join(f"{t + ' s/step':>17}" for t in tools)
        + " | last-10 reward "
        + " ".join(f"{t:>12}" for t in tools)
    )
    lines = [head]
    for label, row in [*[(str(seed), {t: by[t, seed] for t in tools}) for seed in seeds], ("mean", mean)]:
        lines.append(
            f"{label:>6} | "
            + " ".join(f"{row[t]['s_per_step']:>17.4f}" for t in tools)
            + " | "
            + " " * 15
            + " ".join(f"{row[t]['reward_last10']:>12.3f}" for t in tools)
        )
    summary: dict[str, Any] = {"mean": mean, "speedup": {}, "reward_last10_diff": {}}
    pairs = [
        (b, t)
        for b, t in (
            ("trl", "rlvr"),
            ("trl-defaults", "rlvr"),
            ("trl", "rlvr-async"),
            ("rlvr", "rlvr-async"),
            ("trl", "trl-defaults"),
        )
        if b in tools and t in tools
    ]
    for base, tool in pairs:
        sp = _speedup(by, base, tool, seeds)
        rd = _reward_diff(by, base, tool, seeds)
        summary["speedup"][f"{tool}/{base}"] = sp
        summary["reward_last10_diff"][f"{tool}-{base}"] = rd
        lo, hi = rd["ci95"]
        lines.append(
            f"{tool} vs {base}: steps/s x{sp['ratio']:.2f} (seeds {sp['min']:.2f}..{sp['max']:.2f}; inner step "
            f"x{sp['inner_ratio']:.2f}; CPU s/step x{sp['cpu_ratio']:.2f}); last-10 reward {tool} - {base} = {rd['diff']:+.3f} "
            f"(95% interval {lo:+.3f} .. {hi:+.3f})"
        )
    if "trl" in tools and "rlvr" in tools:
        sp, rd = summary["speedup"]["rlvr/trl"], summary["reward_last10_diff"]["rlvr-trl"]
        # not worse: the interval reaches 0 or above (with one seed there is no interval, and no verdict)
        not_worse = rd["n"] >= 2 and math.isfinite(rd["ci95"][1]) and rd["ci95"][1] >= 0
        summary["target_met"] = sp["ratio"] >= TARGET_SPEEDUP and not_worse
        lines.append(
            f"target (rlvr >= {TARGET_SPEEDUP}x TRL's steps/s, the reward interval not below 0): "
            f"{'met' if summary['target_met'] else 'NOT met'}"
        )
    return "\n".join(lines), summary


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "trl", "datasets"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def driver_main(args: argparse.Namespace) -> None:
    from trainer.models.tiny_model import ensure_tiny_model

    if importlib.util.find_spec("trl") is None:
        raise SystemExit("TRL is not installed: pip install -e '.[bench]' (or run `make bench`)")
    model_dir = args.model_dir or str(ensure_tiny_model())
    from benchmarks.provenance import code_revision

    load_before = os.getloadavg()
    busy = _busy_cores()
    if busy > 0.2:
        print(f"warning: other processes are using {busy:.1f} CPU cores; they will slow both tools unevenly")
    seeds = list(range(args.seeds))
    tools = list(args.tools)
    settings = _settings(args)
    print(
        f"model {model_dir}; {args.seeds} seeds x {args.steps} steps x {len(tools)} tools, {args.threads} torch "
        f"threads, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    runs = []
    for seed in seeds:
        # every tool once per seed, the order rotated by the seed, so that drift in machine load (and being
        # first or last) hits all tools alike
        for tool in tools[seed % len(tools) :] + tools[: seed % len(tools)]:
            run = _launch(tool, seed, args, model_dir)
            sm = run["summary"]
            print(
                f"  {tool:<12} seed {seed}: {sm['s_per_step']:.4f} s/step, reward {sm['reward_first10']:.3f} -> "
                f"{sm['reward_last10']:.3f}, {run['wall_s']:.0f}s wall, other processes used "
                f"{run['other_cores']:.2f} cores",
                flush=True,
            )
            runs.append(run)
    table, summary = _table(runs, seeds, tools)
    print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "revision": code_revision(),
        "settings": asdict(settings),
        "tools": tools,
        "rlvr_async": RLVR_ASYNC,
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), **_versions()},
        "model_dir": model_dir,
        "timing": "s_per_step: median wall time between consecutive step ends after the warm-up steps; "
        "inner_s_per_step: TRL on_step_begin->on_step_end, rlvr perf/step_s",
        "summary": summary,
        "table": table,
        "runs": [{k: _rounded(v) for k, v in run.items()} for run in runs],
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=Settings.steps, help="training steps per run")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1, each run once per tool")
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS), help="the tools to run")
    parser.add_argument("--threads", type=int, default=Settings.threads, help="torch threads per run")
    parser.add_argument(
        "--warmup", type=int, default=Settings.warmup_steps, help="steps left out of the timing"
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="where to write the JSON results")
    parser.add_argument("--model-dir", help="model directory; default: the built-in tiny model")
    parser.add_argument("--child", choices=TOOLS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
    else:
        driver_main(args)


if __name__ == "__main__":
    main()
