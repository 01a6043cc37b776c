"""The demo's task, models and learning, measured: ``python benchmarks/chain_demo.py [--seeds 0 1 2]``.

1. Builds ``tiny:chain`` and ``tiny:chain-teacher`` in a fresh ``RLVR_HOME`` (so the build time is the one a
   new user waits; ``--reuse-models DIR`` measures the rest on models built before) and reads each model's
   greedy accuracy per level on held-out problems of the task.
2. The student's pass-rate histogram: ``--prompts`` held-out problems, ``--samples`` completions each at
   temperature 1, and how many prompts fall in each pass-rate bin (GRPO learns only from prompts whose
   group is neither all right nor all wrong).
3. The demo preset (trainer/presets/demo.yaml) as it ships, trained once per seed, then the greedy accuracy
   of the base model and of the final checkpoint on 500 held-out problems; and the same preset with the
   teacher's credit turned off (plain GRPO) for comparison unless ``--no-plain``.

Writes a Markdown report to ``--out`` (default ``benchmarks/results/chain_demo.md``) headed by the code
revision and the models' weight hashes, so a figure can be traced to what produced it. Nothing is cached:
the command regenerates every figure. About 3 minutes for the build and 4-6 minutes a training run on 2
quiet cores.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# (label, low, high): a pass rate r falls in the first bin with low <= r < high (the ends are exact 0 and 1)
BINS = [
    ("0", 0.0, 1e-9),
    ("(0, 0.25)", 1e-9, 0.25),
    ("[0.25, 0.5)", 0.25, 0.5),
    ("[0.5, 0.75)", 0.5, 0.75),
    ("[0.75, 1)", 0.75, 1.0),
    ("1", 1.0, 1.0 + 1e-9),
]


def revision() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True)
        return sha.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def weights_hash(model_dir: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(model_dir.glob("*.safetensors")):
        digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


def per_level_accuracy(model_dir: Path, n: int) -> dict[str, float]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data.chain_arithmetic import MIXED_LEVELS, chain_arithmetic_samples
    from trainer.models.tiny_model import greedy_completions
    from trainer.models.tiny_recipes import chain_answer

    model, tok = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    out = {}
    for level in (*MIXED_LEVELS, "mixed"):
        samples = chain_arithmetic_samples(n, seed=1234, level=level)
        texts = greedy_completions(model, tok, [s.prompt for s in samples], max_new_tokens=96)
        out[level] = sum(chain_answer(t) == s.answer for t, s in zip(texts, samples, strict=True)) / n
    return out


def pass_rates(model_dir: Path, prompts: int, samples: int) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data.chain_arithmetic import chain_arithmetic_samples
    from trainer.models.tiny_recipes import chain_answer

    torch.manual_seed(0)
    model, tok = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    model.eval()
    problems = chain_arithmetic_samples(prompts, seed=4321, level="mixed")
    rates = []
    for start in range(0, prompts, 32):
        chunk = problems[start : start + 32]
        enc = tok([s.prompt for s in chunk], return_tensors="pt", padding=True, padding_side="left")
        with torch.no_grad():
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                max_new_tokens=96,
                num_return_sequences=samples,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )
        texts = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        for i, s in enumerate(chunk):
            group = texts[i * samples : (i + 1) * samples]
            rates.append(sum(chain_answer(t) == s.answer for t in group) / samples)
    return rates


def histogram(rates: list[float]) -> list[tuple[str, int]]:
    return [(label, sum(lo <= r < hi for r in rates)) for label, lo, hi in BINS]


def greedy_read(model_dir: str | Path, n: int = 500) -> tuple[float, float]:
    """(greedy accuracy, share of greedy completions answered bare: '####' first, no working) on ``n``
    held-out problems of the demo's task."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.tiny_model import greedy_completions
    from trainer.models.tiny_recipes import chain_answer, chain_held_out

    model, tok = AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir)
    problems = chain_held_out(n)
    texts = greedy_completions(model, tok, [p for p, _ in problems], max_new_tokens=96)
    right = sum(chain_answer(t) == answer for t, (_, answer) in zip(texts, problems, strict=True))
    return right / n, sum(t.lstrip().startswith("####") for t in texts) / n


def train_demo(seed: int, plain: bool, work: Path) -> tuple[tuple[float, float], tuple[float, float], float]:
    """((greedy accuracy, bare share) before, the same after, seconds) of the demo preset at ``seed``;
    ``plain`` drops the teacher."""
    from trainer.config import config_from_dict
    from trainer.models.checkpoint import latest_checkpoint
    from trainer.models.tiny_model import resolve_model_path
    from trainer.presets import preset
    from trainer.sinks import NullSink, StepReport
    from trainer.step.loop import train

    class Progress(NullSink):
        def on_step(self, report: StepReport) -> None:
            if report.step % 25 == 0:
                m = report.metrics
                print(
                    f"  seed {seed} step {report.step}: reward {m.get('rollout/reward_mean', 0):.3f} "
                    f"{m.get('perf/step_s', 0):.2f} s/step",
                    flush=True,
                )

    data = copy.deepcopy(preset("demo"))
    data["seed"] = seed
    if plain:
        data.pop("teacher", None)
    out = work / f"seed{seed}{'-plain' if plain else ''}"
    data["checkpoint"] = {"output_dir": str(out), "save_steps": 0}
    started = time.perf_counter()
    train(config_from_dict(data), sink=Progress(), log=lambda m: None)
    seconds = time.perf_counter() - started
    return (
        greedy_read(resolve_model_path(data["model"]["name_or_path"])),
        greedy_read(latest_checkpoint(out)),
        seconds,
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--prompts", type=int, default=200)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--level-problems", type=int, default=300)
    p.add_argument("--reuse-models", metavar="DIR", help="an RLVR_HOME whose tiny:chain models are built")
    p.add_argument("--no-plain", action="store_true", help="skip the plain-GRPO comparison runs")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "chain_demo.md"))
    args = p.parse_args()

    home = Path(args.reuse_models or tempfile.mkdtemp(prefix="rlvr-chain-home-"))
    os.environ["RLVR_HOME"] = str(home)
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", min(2, os.cpu_count() or 1))))
    from trainer.models.tiny_model import DEMO_MODEL, ensure_tiny_model

    lines = [
        f"# The demo's task, models and learning\n\nCode revision `{revision()}`; `{' '.join(sys.argv)}`.\n"
    ]
    builds = {}
    for name in (
        f"{DEMO_MODEL}-teacher",
        DEMO_MODEL,
    ):  # the student starts from the teacher: each build timed alone
        started = time.perf_counter()
        path = ensure_tiny_model(name, log=lambda m: print(m, flush=True))
        builds[name] = (path, time.perf_counter() - started)
    lines.append(
        f"## Models\n\nBuilt in {sum(s for _, s in builds.values()):.0f} s in all (this run); greedy accuracy on "
        f"{args.level_problems} held-out problems per level.\n\n"
        "| model | weights sha256 | build s | easy | medium | hard | mixed |\n|---|---|---|---|---|---|---|"
    )
    for name, (path, seconds) in builds.items():
        acc = per_level_accuracy(path, args.level_problems)
        lines.append(
            f"| {name} | `{weights_hash(path)}` | {seconds:.0f} | "
            + " | ".join(f"{acc[k]:.3f}" for k in ("easy", "medium", "hard", "mixed"))
            + " |"
        )
        print(lines[-1], flush=True)
    rates = pass_rates(builds[DEMO_MODEL][0], args.prompts, args.samples)
    lines.append(
        f"\n## Pass rates of {DEMO_MODEL}\n\n{args.prompts} held-out problems x {args.samples} samples at "
        f"temperature 1; mean pass rate {sum(rates) / len(rates):.3f}.\n\n| pass rate | prompts |\n|---|---|"
    )
    lines += [f"| {label} | {count} |" for label, count in histogram(rates)]
    print("\n".join(lines[-8:]), flush=True)
    if args.seeds:
        lines.append(
            "\n## The demo preset, trained per seed\n\nGreedy decoding on 500 held-out problems of the task; "
            "'bare' is the share of completions that give the answer with no working.\n\n"
            "| run | seed | greedy before | greedy after | gain | bare before | bare after | train s |\n"
            "|---|---|---|---|---|---|---|---|"
        )
        work = Path(tempfile.mkdtemp(prefix="rlvr-chain-runs-"))
        for plain in (False, True) if not args.no_plain else (False,):
            for seed in args.seeds:
                (before, bare_before), (after, bare_after), seconds = train_demo(seed, plain, work)
                label = "plain GRPO (no teacher)" if plain else "demo preset"
                lines.append(
                    f"| {label} | {seed} | {before:.3f} | {after:.3f} | {after - before:+.3f} | "
                    f"{bare_before:.2f} | {bare_after:.2f} | {seconds:.0f} |"
                )
                print(lines[-1], flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
