"""Scalar reward model scoring throughput: the ``reward_model`` source against a plain one-at-a-time loop.

Both score the same chain-arithmetic completions of mixed length (worked scratchpads of every level, bare answers,
wrong answers, half-written working) with the same tiny sequence-classification reward model (``tiny:chain``'s
weights under a one-output head), in the same process, alternating, so the only difference is how they are fed:

- rlvr: the ``reward_model`` verifier (trainer/verifiers/reward_model.py): micro-batches of ``--micro-batch-size``
  sorted by length, right-padded, under ``torch.inference_mode()``;
- baseline: the loop people write first, one ``tokenizer(prompt + completion)`` and one forward pass per
  completion (also under ``inference_mode``, so the gap is batching alone).

Reported: completions/s of each (median of ``--repeats``), their ratio, and the largest difference between the two
score lists (they must agree). Timings are wall-clock on this machine with its torch threads; the load average
before and after is recorded because a shared machine skews every figure.

    .venv/bin/python benchmarks/reward_model_throughput.py                       # 512 completions, 5 repeats
    .venv/bin/python benchmarks/reward_model_throughput.py --n 64 --repeats 1 --out /tmp/rm.json   # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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

RESULTS = REPO / "benchmarks" / "results" / "reward_model_throughput.json"


def build_reward_model(out_dir: Path, seed: int) -> Path:
    """``tiny:chain`` with a fresh one-output head (seeded): a scalar reward model of the demo's architecture."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging

    from trainer.models.tiny_model import ensure_tiny_model

    policy = ensure_tiny_model("tiny:chain")
    torch.manual_seed(seed)
    logging.set_verbosity_error()
    AutoModelForSequenceClassification.from_pretrained(policy, num_labels=1).save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(policy).save_pretrained(out_dir)
    return out_dir


def completions(n: int, seed: int) -> tuple[list[str], list[str]]:
    """(prompts, completions): ``n`` chain problems of every level, each answered one of four ways."""
    from trainer.data.chain_arithmetic import chain_arithmetic_samples

    rng = random.Random(seed)
    prompts, texts = [], []
    for sample in chain_arithmetic_samples(n, seed=seed, level="mixed"):
        solution = str(sample.meta["solution"])
        kind = rng.randrange(4)
        if kind == 0:
            text = solution  # the worked scratchpad
        elif kind == 1:
            text = f"#### {sample.answer}"  # the bare answer
        elif kind == 2:
            text = f"#### {int(str(sample.answer)) + rng.randint(1, 9)}"  # a wrong bare answer
        else:
            text = solution[: rng.randint(1, max(len(solution) - 1, 1))]  # working cut short
        prompts.append(sample.prompt)
        texts.append(text)
    return prompts, texts


def one_at_a_time(rm: Any, prompts: list[str], texts: list[str]) -> list[float]:
    import torch

    scores = []
    for prompt, text in zip(prompts, texts, strict=True):
        enc = rm.tokenizer(prompt + text, return_tensors="pt")
        with torch.inference_mode():
            scores.append(float(rm.model(**enc.to(rm.device)).logits[0, 0]))
    return scores


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=512, help="completions scored per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    import torch

    from trainer.config import VerifierSpec
    from trainer.samples import Sample
    from trainer.verifiers import build_verifiers

    load_before = os.getloadavg()
    prompts, texts = completions(args.n, args.seed)
    samples = [Sample(f"c{i}", p) for i, p in enumerate(prompts)]
    with tempfile.TemporaryDirectory() as tmp:
        rm_dir = build_reward_model(Path(tmp) / "tiny-chain-rm", args.seed)

        params = {"model": str(rm_dir), "micro_batch_size": args.micro_batch_size, "input_format": "plain"}
        ((_, verifier),) = build_verifiers([VerifierSpec(name="reward_model", label="rm", params=params)])
        rm = verifier._rm  # type: ignore[attr-defined]  # the loaded model both paths share
        verifier(texts[:32], samples[:32])  # warm-up
        one_at_a_time(rm, prompts[:32], texts[:32])
        ours_s, loop_s = [], []
        for _ in range(args.repeats):  # alternating, so drift in the machine's load hits both
            seconds, results = timed(lambda: verifier(texts, samples))
            ours_s.append(seconds)
            seconds, baseline = timed(lambda: one_at_a_time(rm, prompts, texts))
            loop_s.append(seconds)
        scores = [r.reward for r in results]
        lengths = [
            len(row)
            for row in rm.tokenizer([p + t for p, t in zip(prompts, texts, strict=True)])["input_ids"]
        ]
        model_hash = weights_hash(rm_dir)
    ours, loop = args.n / statistics.median(ours_s), args.n / statistics.median(loop_s)
    out = {
        "benchmark": "reward_model_throughput",
        "revision": code_revision(),
        "model": f"tiny:chain + one-output head (seed {args.seed}), sha256 {model_hash}",
        "model_hash": model_hash,
        "completions": args.n,
        "tokens_min_mean_max": [min(lengths), round(statistics.fmean(lengths), 1), max(lengths)],
        "micro_batch_size": args.micro_batch_size,
        "repeats": args.repeats,
        "device": str(rm.device),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "rlvr_completions_per_s": round(ours, 1),
        "one_at_a_time_completions_per_s": round(loop, 1),
        "ratio": round(ours / loop, 2),
        "rlvr_seconds": [round(s, 3) for s in ours_s],
        "one_at_a_time_seconds": [round(s, 3) for s in loop_s],
        "max_abs_score_difference": max(abs(a - b) for a, b in zip(scores, baseline, strict=True)),
        "absent": sum(r.absent for r in results),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
