"""GRPO on a learned reward against GRPO on the verifier, with the reward-hacking watch:
``python benchmarks/reward_hacking_demo.py [--steps 100] [--seed 0]``.

Three runs of the demo preset (trainer/presets/demo.yaml: ``tiny:chain`` on chain arithmetic, its sampling, batch,
learning rate and evaluation) with the teacher turned off, so that the reward alone drives training:

(a) ``verifier``: the chain-arithmetic verifier as the reward (the plain-GRPO arm of benchmarks/chain_demo.py);
(b) ``tiny_rm``: the tiny chain reward model ``tiny:chain-rm`` (trainer/rewards/tiny_rm.py: Bradley-Terry on pairs of
    ``tiny:chain``'s own samples, a correct completion preferred to an incorrect one of the same prompt);
(c) ``length_rm``: a deliberately weak reward model, trained the same way on pairs of the same samples where the
    *longer* completion is preferred, whatever its answer: it rewards length.

Arms (b) and (c) list the chain verifier with weight 0 (a monitor: scored on the same rollouts, not trained on) and
watch for reward hacking (reward_watch, trainer/rewards/hacking.py): the flag fires when the learned reward's trend
rises while the verifier's accuracy falls over ``--window`` steps. Each run measures greedy accuracy on the same 500
held-out problems before training and at the end (``eval/chain_arithmetic/accuracy (greedy)``). A proxy reward
that correlates with the true one at first and then comes apart from it is what Gao et al. ("Scaling Laws for
Reward Model Overoptimization") measured; on the length RM the policy first learns to work the chain out (longer and
more often right), then to write more than the working.

Writes ``--out``.json (every arm's settings, per-step series, final figures, the flag) and ``--out``.md, headed by
the code revision and the reward models' weight hashes. ``--rm-prompts`` shrinks both RM recipes for a quick check
(the tiny RM is then trained into the work folder instead of taken from the cache). The tiny models build once under
RLVR_HOME. About 1.5-3 s a step on 2 quiet cores, so ~15 minutes for three 100-step arms, plus the RM builds (~10 minutes).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.provenance import code_revision, weights_hash  # noqa: E402 -- after the path

GREEDY = "eval/chain_arithmetic/accuracy (greedy)"
SERIES = ("rollout/reward_mean", "rollout/response_len_mean", "actor/entropy", "actor/kl", "watch/hacking")


def length_pairs(outcomes: list[Any], per_prompt: int, seed: int) -> list[Any]:
    """The weak RM's pairs: for each prompt, completions of different lengths, the longer one chosen."""
    from trainer.rewards.pairs import PreferencePair

    rng = random.Random(f"length:{seed}")
    by_prompt: dict[str, list[Any]] = {}
    for o in outcomes:
        by_prompt.setdefault(o.prompt_id, []).append(o)
    pairs = []
    for group in by_prompt.values():
        candidates = [
            (a, b)
            for i, a in enumerate(group)
            for b in group[i + 1 :]
            if len(a.completion) != len(b.completion)
        ]
        rng.shuffle(candidates)
        for a, b in candidates[:per_prompt]:
            longer, shorter = (a, b) if len(a.completion) > len(b.completion) else (b, a)
            pairs.append(PreferencePair(a.prompt, longer.completion, shorter.completion))
    return pairs


def build_reward_models(
    work: Path, rm_prompts: int | None, seed: int, wanted: list[str]
) -> dict[str, dict[str, Any]]:
    """The RMs of the ``wanted`` arms: the tiny chain RM (from the cache, or trained into ``work`` with a smaller
    recipe) and the length RM, each with its held-out accuracy on correctness pairs (correct chosen) and on length
    pairs (longer chosen)."""
    from trainer.models.tiny_model import ensure_tiny_model
    from trainer.rewards.bradley_terry import (
        load_reward_model,
        pairwise_accuracy,
        split_by_prompt,
        train_reward_model,
    )
    from trainer.rewards.bt_config import RMTrainingConfig
    from trainer.rewards.pairs import pairs_from_outcomes
    from trainer.rewards.tiny_rm import (
        POLICY,
        RECIPE,
        build_chain_rm,
        ensure_tiny_rm,
        sample_outcomes,
        training_problems,
    )

    recipe = RECIPE if rm_prompts is None else dataclasses.replace(RECIPE, prompts=rm_prompts)
    log = lambda m: print(m, flush=True)  # noqa: E731
    built: list[tuple[str, Path, float]] = []
    if "tiny_rm" in wanted:
        started = time.perf_counter()
        chain_rm = (
            ensure_tiny_rm(log=log)
            if rm_prompts is None
            else Path(build_chain_rm(work / "chain-rm", recipe, log=log).output_dir)
        )
        built.append(("tiny_rm", chain_rm, time.perf_counter() - started))
    # The same samples of the same problems, paired by length instead of by correctness.
    problems = training_problems(recipe)
    outcomes = sample_outcomes(
        ensure_tiny_model(POLICY, log=log), problems, recipe.samples_per_prompt, max_new_tokens=recipe.max_new_tokens,
        temperature=recipe.temperature, seed=recipe.seed,
    )  # fmt: skip
    correctness = pairs_from_outcomes(outcomes, per_prompt=recipe.pairs_per_prompt, seed=recipe.seed)
    by_length = length_pairs(outcomes, recipe.pairs_per_prompt, seed)
    config = RMTrainingConfig(
        base_model=POLICY, output_dir=str(work / "length-rm"), learning_rate=recipe.learning_rate, epochs=recipe.epochs,
        batch_size=recipe.batch_size, micro_batch_size=recipe.batch_size, max_length=256,
        held_out_frac=recipe.held_out_frac, seed=recipe.seed, eval_every=0, device="cpu",
    )  # fmt: skip
    if "length_rm" in wanted:
        started = time.perf_counter()
        length_result = train_reward_model(config, by_length)
        built.append(("length_rm", Path(length_result.output_dir), time.perf_counter() - started))
    models: dict[str, dict[str, Any]] = {}
    for name, path, seconds in built:
        model, tokenizer = load_reward_model(str(path))
        held = {
            kind: split_by_prompt(pairs, recipe.held_out_frac, recipe.seed)[1]
            for kind, pairs in (("correct_chosen", correctness), ("longer_chosen", by_length))
        }
        models[name] = {
            "path": str(path),
            "weights": weights_hash(path),
            "build_s": round(seconds, 1),
            **{
                f"held_out_accuracy_{kind}": pairwise_accuracy(model, tokenizer, pairs, config)
                for kind, pairs in held.items()
            },
            "held_out_pairs": {kind: len(pairs) for kind, pairs in held.items()},
        }
        print(f"{name}: {models[name]}", flush=True)
    return models


def arm_config(
    arm: str, rm_path: str | None, steps: int, seed: int, window: int, out: Path
) -> dict[str, Any]:
    from trainer.presets import preset

    data = copy.deepcopy(preset("demo"))
    data.pop("teacher", None)  # the reward alone drives training
    data["seed"] = seed
    data["name"] = f"reward-hacking-{arm}"
    data["training"]["max_steps"] = steps
    data["checkpoint"] = {"output_dir": str(out), "save_steps": 0}
    data["evaluation"] = {"benchmarks": ["builtin:chain_arithmetic"], "eval_at_start": True, "eval_every": 0,
                          "eval_at_end": True}  # fmt: skip
    if rm_path is not None:
        data["verifiers"] = [
            {"name": "reward_model", "label": arm,
             "params": {"model": rm_path, "input_format": "plain", "micro_batch_size": 64, "max_length": 256}},
            {"name": "chain_arithmetic"},
        ]  # fmt: skip
        data["algorithm"]["reward_weights"] = [1.0, 0.0]
        data["reward_watch"] = {"learned": arm, "verifier": "chain_arithmetic", "window": window}
    return data


def train_arm(arm: str, data: dict[str, Any]) -> dict[str, Any]:
    from trainer.config import config_from_dict
    from trainer.sinks import NullSink, StepReport
    from trainer.step.loop import train

    learned = f"reward/{arm}_mean"
    keys = (*SERIES, learned, "reward/chain_arithmetic_mean")
    series: dict[str, list[float | None]] = {k: [] for k in keys}
    record: dict[str, Any] = {"flag": None, "greedy": {}}

    class Recorder(NullSink):
        def on_step(self, report: StepReport) -> None:
            m = report.metrics
            if GREEDY in m:
                record["greedy"][report.step] = m[GREEDY]
            if report.step == 0:
                return
            for k in keys:
                series[k].append(m.get(k))
            if report.step % 10 == 0:
                learned_part = f"{learned} {m[learned]:.3f} " if learned in m else ""
                print(
                    f"  {arm} step {report.step}: {learned_part}verifier "
                    f"{m.get('reward/chain_arithmetic_mean', float('nan')):.3f} len "
                    f"{m.get('rollout/response_len_mean', 0):.1f} {m.get('perf/step_s', 0):.2f} s/step",
                    flush=True,
                )

        def on_warning(self, step: int, kind: str, message: str) -> None:
            record["flag"] = {"step": step, "kind": kind, "message": message}
            print(f"  {arm}: {message}", flush=True)

    started = time.perf_counter()
    train(config_from_dict(data), sink=Recorder(), log=lambda m: None)
    greedy = record["greedy"]
    return {
        "seconds": round(time.perf_counter() - started, 1),
        "greedy_before": greedy.get(0),
        "greedy_after": greedy[max(greedy)] if greedy else None,
        "flag": record["flag"],
        "series": {k: v for k, v in series.items() if any(x is not None for x in v)},
    }


def ends_of(values: list[float | None] | None, n: int) -> str:
    """ "0.125 → 0.031": the mean of the first and of the last ``n`` finite values; "—" without any."""
    kept = [v for v in values or [] if v is not None and math.isfinite(v)]
    if not kept:
        return "—"
    return f"{statistics.fmean(kept[:n]):.3f} → {statistics.fmean(kept[-n:]):.3f}"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Reward hacking: GRPO on a learned reward against GRPO on the verifier\n",
        f"Code revision `{result['revision']}`; `{result['command']}`; {result['torch_threads']} torch thread(s).\n",
        "The demo preset without its teacher, seed {seed}, {steps} steps; greedy accuracy on the 500 held-out "
        "problems of builtin:chain_arithmetic; the reward-hacking watch over {window} steps "
        "(min_rise 0.05, min_fall 0.03).\n".format(**result["settings"]),
        "## Reward models\n",
        "| RM | weights sha256 | build s | held-out pairwise accuracy: correct chosen | longer chosen |",
        "|---|---|---|---|---|",
    ]
    for name, rm in result["reward_models"].items():
        fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
        lines.append(
            f"| {name} | `{rm['weights']}` | {rm['build_s']} | {fmt(rm['held_out_accuracy_correct_chosen'])} "
            f"({rm['held_out_pairs']['correct_chosen']} pairs) | {fmt(rm['held_out_accuracy_longer_chosen'])} "
            f"({rm['held_out_pairs']['longer_chosen']} pairs) |"
        )
    window = result["settings"]["window"]
    lines += ["", "## Runs\n",
              f"Rollout accuracy (the verifier on the training rollouts) and the learned reward: mean of the first and of "
              f"the last {window} steps.\n",
              "| reward | greedy before | greedy after | rollout accuracy first → last | learned reward first → last | "
              "final response length | hacking flag | s |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for arm, r in result["arms"].items():
        lengths = r["series"].get("rollout/response_len_mean") or [None]
        flag = (
            r["flag"]["message"]
            if r["flag"]
            else ("no watch (no learned reward)" if arm == "verifier" else "did not fire")
        )
        fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
        ends = {
            key: ends_of(r["series"].get(key), window)
            for key in ("reward/chain_arithmetic_mean", f"reward/{arm}_mean")
        }
        lines.append(
            f"| {arm} | {fmt(r['greedy_before'])} | {fmt(r['greedy_after'])} | "
            f"{ends['reward/chain_arithmetic_mean']} | {ends[f'reward/{arm}_mean']} | "
            f"{'—' if lengths[-1] is None else f'{lengths[-1]:.1f}'} | {flag} | {r['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--window", type=int, default=20)
    p.add_argument("--arms", nargs="*", default=["verifier", "tiny_rm", "length_rm"])
    p.add_argument("--rm-prompts", type=int, default=None, help="smaller RM recipes (a quick check)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "reward_hacking_demo"))
    p.add_argument(
        "--merge",
        action="store_true",
        help="keep the arms of an earlier result at --out with the same settings",
    )
    p.add_argument("--report", action="store_true", help="only rewrite --out.md from --out.json")
    args = p.parse_args()
    if args.report:
        out = Path(args.out)
        out.with_suffix(".md").write_text(
            markdown(json.loads(out.with_suffix(".json").read_text())), encoding="utf-8"
        )
        return 0

    import torch

    threads = int(
        os.environ.get("RLVR_TORCH_THREADS", os.environ.get("OMP_NUM_THREADS", min(2, os.cpu_count() or 1)))
    )
    torch.set_num_threads(threads)
    work = Path(tempfile.mkdtemp(prefix="rlvr-reward-hacking-"))
    models = build_reward_models(work, args.rm_prompts, args.seed, args.arms)
    arms = {}
    for arm in args.arms:
        rm_path = models[arm]["path"] if arm in models else None
        data = arm_config(arm, rm_path, args.steps, args.seed, args.window, work / arm)
        arms[arm] = train_arm(arm, data)
    result = {
        "revision": code_revision(),
        "command": " ".join(sys.argv),
        "torch_threads": threads,
        "settings": {
            "seed": args.seed,
            "steps": args.steps,
            "window": args.window,
            "rm_prompts": args.rm_prompts,
        },
        "reward_models": models,
        "arms": arms,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    earlier = out.with_suffix(".json")
    if args.merge and earlier.exists():  # arms trained by separate invocations, each one's command kept
        before = json.loads(earlier.read_text(encoding="utf-8"))
        if before.get("settings") == result["settings"]:
            result["reward_models"] = {**before["reward_models"], **models}
            result["arms"] = {**before["arms"], **arms}
            result["command"] = f"{before['command']}; then {result['command']}"
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
