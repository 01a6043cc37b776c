"""The training forward and backward over one GRPO batch: padded rows against packed rows of several lengths.

One batch is sampled from a built-in model with the hf engine (seeded), then scored again and again with gradients,
as the update scores it: by the cache-sharing forward over padded rows (``training.packed_forward: false``), by
whole padded rows (``training.shared_prompt_forward: false``) and by packed rows of at most 64 .. 2048 tokens
(trainer/models/packed_forward.py; the default is the model's hidden size). Every figure is the median of the
repeats, the paths interleaved repeat by repeat so that the machine's drift hits them alike; the ratios are against
the cache-sharing forward of the same run.

    python benchmarks/packed_forward.py                       # the chain and addition batches, ~1 minute
    python benchmarks/packed_forward.py --tasks chain --repeats 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's trainer and benchmarks, whatever is installed
DEFAULT_OUT = REPO / "benchmarks" / "results" / "packed_forward.json"
ROW_TOKENS = (64, 128, 256, 512, 2048)
# (built-in model, prompts, completions per prompt, most new tokens): the reproduction's and the vs_trl batch
TASKS: dict[str, tuple[str, int, int, int]] = {
    "chain": ("tiny:chain", 8, 8, 80),
    "addition": ("tiny:addition", 4, 8, 8),
}


def _prompts(task: str, n: int) -> list[str]:
    if task == "chain":
        from trainer.data.chain_arithmetic import chain_arithmetic_samples

        return [s.prompt for s in chain_arithmetic_samples(n, 0, level="mixed")]
    from trainer.data.demo_task import demo_samples

    return [s.prompt for s in demo_samples(n, 0)]


def measure(task: str, repeats: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.logprobs import completion_logprobs, score_full_rows, token_logprobs_and_entropy
    from trainer.models.packed_forward import keep_padding, packed_logits, row_tokens_for
    from trainer.models.tiny_model import resolve_model_path
    from trainer.rollout import HFRolloutEngine, SamplingParams

    name, n_prompts, group, new_tokens = TASKS[task]
    path = resolve_model_path(name)
    models = {
        kind: AutoModelForCausalLM.from_pretrained(path).train() for kind in ("packed", "shared", "full")
    }
    keep_padding(models["shared"])
    score_full_rows(models["full"])
    engine = HFRolloutEngine(models["packed"], AutoTokenizer.from_pretrained(path))
    prompts = [p for p in _prompts(task, n_prompts) for _ in range(group)]
    batch = engine.generate(prompts, SamplingParams(new_tokens, 1.0), torch.Generator().manual_seed(0))
    tensors = (batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask)
    mask = batch.completion_mask.float()

    def packed(rows: int) -> Callable[[], Any]:
        def score() -> Any:
            logits = packed_logits(models["packed"], *tensors, row_tokens=rows)
            assert logits is not None
            return token_logprobs_and_entropy(logits, batch.completion_ids, 1.0)

        return score

    paths: dict[str, Callable[[], Any]] = {
        "cache-sharing forward, padded rows": lambda: completion_logprobs(models["shared"], *tensors, 1.0),
        "whole padded rows": lambda: completion_logprobs(models["full"], *tensors, 1.0),
        **{f"packed rows of {n} tokens": packed(n) for n in ROW_TOKENS},
    }
    times: dict[str, list[float]] = {label: [] for label in paths}
    for _ in range(repeats + 1):  # the first round warms up and is left out
        for label, score in paths.items():
            for m in models.values():
                m.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            logp, entropy = score()
            ((logp * mask).sum() + 0.1 * (entropy * mask).sum()).backward()
            times[label].append(time.perf_counter() - t0)
    base = statistics.median(times["cache-sharing forward, padded rows"][1:])
    lengths = batch.completion_mask.sum(-1).float()
    return {
        "task": task,
        "model": name,
        "completions": len(prompts),
        "completion_tokens_mean": round(float(lengths.mean()), 2),
        "completion_tokens_max": int(lengths.max()),
        "padded_width": int(batch.prompt_ids.shape[1] + batch.completion_ids.shape[1]),
        "default_row_tokens": row_tokens_for(models["packed"]),
        "ms": {label: round(1000 * statistics.median(t[1:]), 2) for label, t in times.items()},
        "speedup_vs_cache_sharing": {
            label: round(base / statistics.median(t[1:]), 2) for label, t in times.items()
        },
    }


def _markdown(results: list[dict[str, Any]], header: dict[str, Any]) -> str:
    from benchmarks.provenance import timing_sentence

    lines = [
        "# The training forward: padded rows against packed rows",
        "",
        timing_sentence(header)
        + " Forward and backward over one sampled batch, median of the repeats (ms); x: the cache-sharing forward's time over the path's, in the same run.",
    ]
    for r in results:
        lines += [
            "",
            f"## {r['task']} ({r['model']})",
            "",
            f"{r['completions']} completions of {r['completion_tokens_mean']} tokens on average (at most "
            f"{r['completion_tokens_max']}), padded rows {r['padded_width']} wide; the default packed row "
            f"{r['default_row_tokens']} tokens.",
            "",
            "| path | ms | x |",
            "|---|---:|---:|",
        ]
        lines += [f"| {k} | {v:.1f} | {r['speedup_vs_cache_sharing'][k]:.2f} |" for k, v in r["ms"].items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds (after one warm-up round)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="JSON results; a .md beside it")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    import torch

    from benchmarks.provenance import timing_header

    torch.set_num_threads(args.threads)
    header = timing_header(torch.get_num_threads(), torch.__version__)
    results = [measure(task, args.repeats) for task in args.tasks]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**header, "results": results}, indent=1) + "\n")
    text = _markdown(results, header)
    out.with_suffix(".md").write_text(text)
    print(text)
    print(f"wrote {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
