"""The tiny chain-arithmetic reward model: its build time, held-out pairwise accuracy and Best-of-N accuracy.

1. Builds ``tiny:chain-rm`` from scratch in a temporary RLVR_HOME that holds only the cached ``tiny:chain`` policy
   (trainer/rewards/tiny_rm.py: sample, label with the chain_arithmetic verifier, pair, Bradley-Terry train), timing
   it; its held-out pairwise accuracy is on pairs of prompts it never trained on.
2. Samples 16 completions of ``tiny:chain`` (temperature 1, seeded) for each of the 500 held-out problems of the
   ``builtin:chain_arithmetic`` benchmark (none of them a training problem of the RM), labels them with the verifier,
   and scores them with the RM through the ``reward_model`` verifier (the code a training run scores with).
3. Best-of-N for N = 1, 2, 4, 8, 16 (trainer/rewards/evaluation.py: the exact expectation over N-subsets): the
   RM's top-scored completion against random choice, majority vote over the extracted answers, and the oracle
   (pass@N).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/tiny_rm.py              # -> benchmarks/results/tiny_rm.json
    .venv/bin/python benchmarks/tiny_rm.py --problems 50 --out /tmp/t.json  # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.provenance import code_revision, weights_hash  # noqa: E402 -- after the path

RESULTS = REPO / "benchmarks" / "results" / "tiny_rm.json"
NS = (1, 2, 4, 8, 16)


def build(home: Path) -> tuple[Path, dict[str, Any], float]:
    """Build tiny:chain-rm under ``home`` (the policy copied in first); its folder, its result and seconds."""
    from trainer.models.tiny_model import ensure_tiny_model, tiny_model_path

    policy = ensure_tiny_model("tiny:chain", log=lambda m: None)
    teacher = tiny_model_path("tiny:chain-teacher")
    os.environ["RLVR_HOME"] = str(home)
    (home / "models").mkdir(parents=True)
    for source in (policy, teacher):  # a recipe's start_from must be there too, or it is built again
        shutil.copytree(source, home / "models" / source.name)
    from trainer.rewards.tiny_rm import ensure_tiny_rm

    t0 = time.perf_counter()
    folder = ensure_tiny_rm(log=print)
    seconds = time.perf_counter() - t0
    return folder, json.loads((folder / "rlvr_reward_model.json").read_text()), seconds


def best_of_n(rm_dir: Path, problems: int, samples: int, seed: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data.chain_arithmetic import chain_arithmetic_samples
    from trainer.models.tiny_model import ensure_tiny_model
    from trainer.rewards.evaluation import ScoredSample, best_of_n_curve
    from trainer.rewards.tiny_rm import BENCHMARK_SEED, BENCHMARK_SIZE
    from trainer.rollout.base import SamplingParams
    from trainer.rollout.hf_engine import HFRolloutEngine
    from trainer.verifiers.base import build_verifier

    chain = chain_arithmetic_samples(BENCHMARK_SIZE, seed=BENCHMARK_SEED, level="mixed")[:problems]
    policy = ensure_tiny_model("tiny:chain", log=lambda m: None)
    engine = HFRolloutEngine(
        AutoModelForCausalLM.from_pretrained(policy), AutoTokenizer.from_pretrained(policy)
    )
    generator = torch.Generator().manual_seed(seed)
    oracle = build_verifier("chain_arithmetic")
    rm = build_verifier("reward_model", {"model": str(rm_dir), "input_format": "plain", "max_length": 256,
                                         "micro_batch_size": 64})  # fmt: skip
    if hasattr(rm, "load"):
        rm.load()
    groups, t0 = [], time.perf_counter()
    for start in range(0, len(chain), 16):
        part = chain[start : start + 16]
        batch = [s for s in part for _ in range(samples)]
        texts = engine.generate(
            [s.prompt for s in batch], SamplingParams(96, 1.0, batch_size=256), generator
        ).texts
        verdicts, scores = oracle(texts, batch), rm(texts, batch)
        for i in range(len(part)):
            rows = range(i * samples, (i + 1) * samples)
            groups.append([
                ScoredSample(verdicts[j].detail.get("extracted"), verdicts[j].correct, scores[j].reward)
                for j in rows
            ])  # fmt: skip
    curve = best_of_n_curve(groups, NS, seed=seed)
    return {**curve.to_json(), "sample_and_score_seconds": round(time.perf_counter() - t0, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    import torch
    from transformers.utils import logging

    logging.set_verbosity_error()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tiny-rm-") as tmp:
        folder, meta, seconds = build(Path(tmp) / "home")
        curve = best_of_n(folder, args.problems, args.samples, args.seed)
        rm_hash = weights_hash(folder)
        policy_hash = weights_hash(Path(tmp) / "home" / "models" / "chain-v4")
    k = args.samples
    result = {
        "git_revision": code_revision(),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
        "models": {"tiny:chain": policy_hash, "tiny:chain-rm": rm_hash},
        "build_seconds": round(seconds, 1),
        "pairs": {
            "train": meta["train_pairs"],
            "held_out": meta["held_out_pairs"],
            "data_hash": meta["data_hash"],
        },
        "held_out_pairwise_accuracy": meta["held_out_accuracy"],
        "held_out_pairwise_accuracy_before_training": meta["initial_held_out_accuracy"],
        "best_of_n": curve,
        f"best_of_{k}": {
            "reward_model": curve["best_of_n"][-1],
            "random": curve["random"][-1],
            "majority_vote": curve["majority"][-1],
            "oracle": curve["oracle"][-1],
        },
        "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/tiny_rm.py",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps({k2: result[k2] for k2 in ("build_seconds", "held_out_pairwise_accuracy", f"best_of_{k}")})
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
