"""Does the tiny model learn to use the calculator? ``python benchmarks/tool_use.py [--seeds 0 1 2]``.

1. Builds (once) ``tiny:chain-tool``: ``tiny:chain-teacher`` fine-tuned to solve half of the chain problems with one
   calculator call (trainer/models/tiny_recipes.py).
2. Its held-out greedy accuracy on ``--problems`` problems of the chain task (the ``builtin:chain_arithmetic``
   held-out set, data seed 1234) with the calculator (greedy episodes through the multi-turn driver) and without it
   (one greedy generation, a tool call it writes answered by nothing), with the share of problems where it calls
   the tool (trainer/environments/evaluation.py).
3. Per seed: GRPO with the ``calculator`` environment from that model for ``--steps`` steps (8 prompts x 8 episodes
   a step, outcome reward from the chain_arithmetic verifier, no shaping), then the same two accuracies of the
   final policy. Reported per seed and as the mean over seeds, each with the paired difference (with the tool
   minus without, problem by problem) and its standard error.

Results go to ``benchmarks/results/tool_use.json`` and ``.md``. Each measured entry (the base model's evaluation,
each seed's run) is stored under a key of the code (a hash of trainer/**/*.py and this file, torch and
transformers versions), the model's hash and the settings; a rerun reuses entries whose key still matches and
measures the rest, so the command regenerates every figure from the code it runs. ``--fresh`` measures everything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.reproduce.provenance import git_commit, model_hash  # noqa: E402

MODEL = "tiny:chain-tool"
TURN_TOKENS = 96  # one model turn: a calculator call is about 85 characters, a scratchpad at most 67
EPISODE_TOKENS = 192  # a whole episode (call, reply, answer: about 130 tokens); the no-tool cap too
MAX_TURNS = 3
RESULTS = REPO / "benchmarks" / "results"


def code_hash() -> str:
    """sha256 (16 hex) of trainer/**/*.py, this file and the torch/transformers versions: what reaches a number."""
    import torch
    import transformers

    digest = hashlib.sha256(f"torch={torch.__version__};transformers={transformers.__version__}".encode())
    for path in [*sorted((REPO / "trainer").rglob("*.py")), Path(__file__).resolve()]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def environment_section() -> dict[str, Any]:
    return {"name": "calculator", "limits": {"max_turns": MAX_TURNS, "max_total_tokens": EPISODE_TOKENS}}


def evaluate(model_dir: str | Path, problems: int) -> dict[str, Any]:
    """Greedy accuracy with and without the calculator on ``problems`` held-out chain problems."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data.chain_arithmetic import BENCHMARK_SEED, chain_arithmetic_samples
    from trainer.environments import EpisodeLimits, environment_factory, verifier_scorer
    from trainer.environments.evaluation import (
        accuracy_with_tools,
        accuracy_without_tools,
        paired_difference,
    )
    from trainer.rollout import HFRolloutEngine
    from trainer.verifiers import build_verifiers

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    engine = HFRolloutEngine(model, tok)
    samples = chain_arithmetic_samples(problems, seed=BENCHMARK_SEED, level="mixed")
    spec = argparse.Namespace(name="chain_arithmetic", params={}, key="chain_arithmetic")
    scorer = verifier_scorer(build_verifiers([spec]), [1.0])
    section = environment_section()
    limits = EpisodeLimits.model_validate(section["limits"])
    started = time.perf_counter()
    with torch.no_grad():
        build = environment_factory(section["name"], {}, scorer)
        tool = accuracy_with_tools(engine, tok, samples, build, limits, TURN_TOKENS)
        bare = accuracy_without_tools(engine, tok, samples, scorer, EPISODE_TOKENS)
    diff = paired_difference(tool.correct, bare.correct)
    return {
        "problems": problems,
        "with_tool": tool.accuracy,
        "without_tool": bare.accuracy,
        "tool_rate_with": tool.tool_rate,
        "tool_rate_without": bare.tool_rate,
        "difference": diff.mean,
        "difference_stderr": diff.stderr,
        "seconds": round(time.perf_counter() - started, 1),
        "example_with": tool.texts[0],
        "example_without": bare.texts[0],
    }


def train_config(seed: int, steps: int, out: Path) -> dict[str, Any]:
    return {
        "name": f"tool-use-seed{seed}",
        "seed": seed,
        "model": {"name_or_path": MODEL},
        "data": {"source": "chain_arithmetic", "task": "mixed", "size": 2000},
        "rollout": {"num_generations": 8, "max_completion_length": TURN_TOKENS, "temperature": 1.0},
        "verifiers": [{"name": "chain_arithmetic"}],
        "environment": environment_section(),
        "algorithm": {
            "advantage_estimator": "grpo",
            "loss_type": "dapo",
            "epsilon": 0.2,
            "epsilon_high": 0.28,
            "beta": 0.0,
        },
        "training": {
            "max_steps": steps,
            "prompts_per_step": 8,
            "micro_batch_size": 64,
            "learning_rate": 1e-4,
        },
        "checkpoint": {"output_dir": str(out), "save_steps": 0},
    }


def train_seed(seed: int, steps: int, problems: int, work: Path) -> dict[str, Any]:
    from trainer.config import config_from_dict
    from trainer.models.checkpoint import latest_checkpoint
    from trainer.sinks import NullSink, StepReport
    from trainer.step.loop import train

    curve: list[dict[str, float]] = []

    class Progress(NullSink):
        def on_step(self, report: StepReport) -> None:
            m = report.metrics
            point = {
                "step": float(report.step),
                "reward": m.get("rollout/reward_mean", float("nan")),
                "tool_calls": m.get("env/tool_calls_mean", float("nan")),
            }
            curve.append(point)
            if report.step % 10 == 0:
                print(
                    f"  seed {seed} step {report.step}: reward {point['reward']:.3f} tool calls "
                    f"{point['tool_calls']:.2f} {m.get('perf/step_s', 0):.2f} s/step",
                    flush=True,
                )

    out = work / f"seed{seed}"
    config = train_config(seed, steps, out)
    started = time.perf_counter()
    train(config_from_dict(config), sink=Progress(), log=lambda m: None)
    seconds = time.perf_counter() - started
    final = latest_checkpoint(out)
    if final is None:
        raise RuntimeError(f"the run of seed {seed} left no checkpoint in {out}")
    after = evaluate(final, problems)
    return {"seed": seed, "steps": steps, "train_seconds": round(seconds, 1), "after": after, "curve": curve}


def entry_key(kind: str, code: str, model: str, **settings: Any) -> str:
    return json.dumps({"kind": kind, "code": code, "model": model, **settings}, sort_keys=True)


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Mean over seeds of the after-training figures, with the seeds' standard deviation of the difference."""
    import statistics

    def mean(key: str) -> float:
        return statistics.fmean(r["after"][key] for r in runs)

    diffs = [r["after"]["difference"] for r in runs]
    return {
        "with_tool": mean("with_tool"),
        "without_tool": mean("without_tool"),
        "tool_rate_with": mean("tool_rate_with"),
        "difference": statistics.fmean(diffs),
        "difference_sd_over_seeds": statistics.stdev(diffs) if len(diffs) > 1 else 0.0,
    }


def markdown(result: dict[str, Any], command: str) -> str:
    base = result["before"]
    lines = [
        "# Tool use: the tiny model and the calculator\n",
        f"Command: `{command}` (code `{result['code']}`, git `{result['git']}`, model `{MODEL}` "
        f"`{result['model_hash']}`).\n",
        f"Greedy accuracy on {base['problems']} held-out chain problems (builtin:chain_arithmetic's, data seed "
        "1234) with the calculator (episodes through the multi-turn driver) and without it (one greedy generation, "
        "a tool call answered by nothing); 'tool rate' is the share of problems where the model called the tool; "
        "'difference' is with minus without, paired by problem, +- its standard error over problems.\n",
        "| model | with tool | without tool | tool rate | difference | train s |",
        "|---|---|---|---|---|---|",
        f"| {MODEL} (before RL) | {base['with_tool']:.3f} | {base['without_tool']:.3f} | "
        f"{base['tool_rate_with']:.2f} | {base['difference']:+.3f} +- {base['difference_stderr']:.3f} | |",
    ]
    for run in result["runs"]:
        a = run["after"]
        lines.append(
            f"| GRPO seed {run['seed']}, {run['steps']} steps | {a['with_tool']:.3f} | {a['without_tool']:.3f} | "
            f"{a['tool_rate_with']:.2f} | {a['difference']:+.3f} +- {a['difference_stderr']:.3f} | "
            f"{run['train_seconds']:.0f} |"
        )
    s = result["summary"]
    lines.append(
        f"| **mean of {len(result['runs'])} seeds** | {s['with_tool']:.3f} | {s['without_tool']:.3f} | "
        f"{s['tool_rate_with']:.2f} | {s['difference']:+.3f} (sd over seeds {s['difference_sd_over_seeds']:.3f}) | |"
    )
    lines += [
        "",
        "GRPO: 8 prompts x 8 episodes a step, the chain_arithmetic verifier's outcome reward on the episode's "
        f"answer, no tool shaping, lr 1e-4; episodes of at most {MAX_TURNS} turns and {EPISODE_TOKENS} tokens, "
        f"{TURN_TOKENS} a turn.",
        "",
        f"Example (seed {result['runs'][0]['seed']} after RL, first problem), with the tool:\n\n```\n"
        f"{result['runs'][0]['after']['example_with']}\n```\n\nwithout:\n\n```\n"
        f"{result['runs'][0]['after']['example_without']}\n```\n",
    ]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--problems", type=int, default=500)
    p.add_argument("--fresh", action="store_true", help="measure everything again, ignoring stored entries")
    p.add_argument("--out", default=str(RESULTS / "tool_use.json"))
    args = p.parse_args()
    if not 1 <= args.problems <= 10_000 or not 1 <= args.steps <= 10_000 or not args.seeds:
        p.error("--problems and --steps must be 1..10000, and give at least one seed")

    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", min(2, os.cpu_count() or 1))))
    from trainer.models.tiny_model import ensure_tiny_model

    model_dir = ensure_tiny_model(MODEL, log=lambda m: print(m, flush=True))
    code, model = code_hash(), model_hash(str(model_dir))
    out = Path(args.out)
    stored: dict[str, Any] = {}
    if out.exists() and not args.fresh:
        stored = {e["key"]: e["value"] for e in json.loads(out.read_text()).get("entries", [])}
    entries: list[dict[str, Any]] = []

    def measured(key: str, measure: Any) -> Any:
        value = stored[key] if key in stored else measure()
        print(("reused " if key in stored else "measured ") + key, flush=True)
        entries.append({"key": key, "value": value})
        return value

    before = measured(
        entry_key("before", code, model, problems=args.problems), lambda: evaluate(model_dir, args.problems)
    )
    runs = []
    with tempfile.TemporaryDirectory(prefix="rlvr-tool-use-") as work:
        for seed in args.seeds:
            key = entry_key("run", code, model, problems=args.problems, seed=seed, steps=args.steps)
            runs.append(measured(key, lambda s=seed: train_seed(s, args.steps, args.problems, Path(work))))
    command = "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/tool_use.py" + (
        ""
        if (args.seeds, args.steps, args.problems) == ([0, 1, 2], 40, 500)
        else " " + " ".join(sys.argv[1:])
    )
    result = {
        "command": command,
        "code": code,
        "git": git_commit(),
        "model_hash": model,
        "before": before,
        "runs": runs,
        "summary": summary(runs),
        "entries": entries,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(result, command))
    print(out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
