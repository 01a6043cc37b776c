"""Evaluation throughput: rlvr's evaluation engine vs a plain transformers ``model.generate`` loop.

Both evaluate the same problems of a built-in benchmark on the warm-started tiny model with the same
sampling settings (n samples per problem, temperature, top_p, max new tokens), the same batches of whole
problems, and the same verifiers (``score_batch``), so the only difference is how samples are generated:

- rlvr: ``trainer.evaluation.engine.evaluate`` (the ``hf`` rollout engine: one prefill per distinct prompt, a
  KV-cached sampling loop that also records every sampled token's logprob and entropy, per-problem
  results with token strings);
- baseline: ``model.generate(do_sample=True, ...)`` on the prompts repeated n times, then decode.

Reported per tool (median of --repeats alternating runs): samples/s over generate + verify, and the time
spent in verification as a fraction of the evaluation time. Run it on a quiet machine; the load average
before and after is recorded because a shared machine skews every figure.

    .venv/bin/python benchmarks/eval_throughput.py                    # addition + chain_sum-easy
    .venv/bin/python benchmarks/eval_throughput.py --problems 20 --repeats 1 --out /tmp/quick.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "eval_throughput.json"


def _generate_baseline(
    model: Any, tokenizer: Any, config: Any, problems: list[Any], prompts: list[str]
) -> dict[str, float]:
    """Plain transformers sampling over the same batches, then the same verification."""
    import torch

    from trainer.verifiers.scoring import build_verifiers, score_batch

    verifiers = build_verifiers(config.verifiers)
    n, per_batch = config.n_samples, config.problems_per_batch
    gen_s = verify_s = 0.0
    samples = correct = 0
    torch.manual_seed(config.seed)
    for start in range(0, len(problems), per_batch):
        batch_problems, batch_prompts = (
            problems[start : start + per_batch],
            prompts[start : start + per_batch],
        )
        t0 = time.perf_counter()
        enc = tokenizer(
            [p for p in batch_prompts for _ in range(n)],
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        )
        with torch.no_grad():
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=config.temperature,
                top_p=config.top_p,
                top_k=0,
                max_new_tokens=config.max_tokens,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
        texts = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        t1 = time.perf_counter()
        scores = score_batch(
            verifiers, config.reward_weights, texts, [s for s in batch_problems for _ in range(n)]
        )
        t2 = time.perf_counter()
        gen_s, verify_s = gen_s + t1 - t0, verify_s + t2 - t1
        samples, correct = samples + len(texts), correct + sum(scores.correct)
    return _figures(samples, gen_s, verify_s, correct / max(samples, 1))


def _rlvr(model: Any, tokenizer: Any, config: Any, problems: list[Any]) -> dict[str, float]:
    from trainer.evaluation.engine import evaluate

    result = evaluate(config, (model, tokenizer), samples=problems)
    t = result.timings
    return _figures(
        int(t["generated_samples"]),
        t["generate_s"],
        t["verify_s"],
        result.metrics[f"pass@1 (n={config.n_samples})"],
    )


def _figures(samples: int, gen_s: float, verify_s: float, accuracy: float) -> dict[str, float]:
    busy = gen_s + verify_s
    return {
        "samples": samples,
        "generate_s": gen_s,
        "verify_s": verify_s,
        "samples_per_s": samples / busy,
        "verify_frac": verify_s / busy,
        "accuracy": accuracy,
    }


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def bench_one(name: str, args: argparse.Namespace, model: Any, tokenizer: Any) -> dict[str, Any]:
    from trainer.data import render_prompt
    from trainer.evaluation.engine import load_benchmark_samples
    from trainer.evaluation.suite import resolve_benchmark

    config = resolve_benchmark(name, n_samples=args.n, max_problems=args.problems, bootstrap_samples=0)
    problems = load_benchmark_samples(config)
    prompts = [render_prompt(p, config.data, tokenizer) for p in problems]
    _rlvr(model, tokenizer, config, problems[: config.problems_per_batch])  # warm-up (and verifier start-up)
    _generate_baseline(model, tokenizer, config, problems[: config.problems_per_batch], prompts)
    runs: dict[str, list[dict[str, float]]] = {"rlvr": [], "generate": []}
    for _ in range(args.repeats):  # alternate, so load drift hits both alike
        runs["rlvr"].append(_rlvr(model, tokenizer, config, problems))
        runs["generate"].append(_generate_baseline(model, tokenizer, config, problems, prompts))
    medians = {tool: _median_run(r) for tool, r in runs.items()}
    return {
        "benchmark": name,
        "settings": {
            "problems": len(problems),
            "n_samples": config.n_samples,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "batch_size": config.batch_size,
            "verifiers": [v.name for v in config.verifiers],
        },
        "median": medians,
        "speedup_rlvr_vs_generate": medians["rlvr"]["samples_per_s"] / medians["generate"]["samples_per_s"],
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", default="builtin:addition,builtin:chain_sum-easy")
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.tiny_model import ensure_tiny_model

    torch.set_num_threads(args.threads)
    path = ensure_tiny_model()
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    load_before = os.getloadavg()
    results = [bench_one(name, args, model, tokenizer) for name in args.benchmarks.split(",")]
    report = {
        "results": results,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "torch_threads": args.threads,
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
        },
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"{'benchmark':<24}{'tool':<10}{'samples/s':>10}{'verify %':>10}{'pass@1':>8}")
    for r in results:
        for tool, m in r["median"].items():
            print(
                f"{r['benchmark']:<24}{tool:<10}{m['samples_per_s']:>10.1f}{100 * m['verify_frac']:>10.2f}"
                f"{m['accuracy']:>8.3f}"
            )
        print(f"{'':<24}rlvr / generate: {r['speedup_rlvr_vs_generate']:.2f}x")
    print(
        f"load average before {load_before[0]:.1f}, after {report['load_average_after'][0]:.1f} "
        f"({os.cpu_count()} cores); results in {args.out}"
    )


if __name__ == "__main__":
    main()
