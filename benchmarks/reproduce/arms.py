"""Running one arm (a config and a seed): train with an in-memory sink, then evaluate its checkpoints.

Results are cached on disk by the hash of the arm's full config, so the baseline of a seed is trained
once and shared by every method (and by later invocations) until the baseline or the trainer's config
changes. Delete ``.cache/reproduce/`` (or pass ``--no-cache``) after changing trainer code.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import arm_config
from benchmarks.reproduce.measures import ArmResult
from trainer.sinks import NullSink, StepReport

CACHE_VERSION = 2  # bump when what an arm records changes
EVAL_PROBLEMS = 200  # fresh additions (not the training prompts' seed)
EVAL_SAMPLES = 4
EVAL_SEED = 1234
GREEDY_PROBLEMS = 500


class MemorySink(NullSink):
    """Keeps every step's metrics (and the group sizes of its rollout records) in memory."""

    def __init__(self) -> None:
        self.metrics: list[dict[str, float]] = []
        self.group_sizes: list[list[int]] = []

    def on_step(self, report: StepReport) -> None:
        metrics = dict(report.metrics)
        metrics["_completions"] = float(len(report.rollouts))
        self.metrics.append(metrics)
        sizes: dict[int, int] = {}
        for record in report.rollouts:
            sizes[record.group] = sizes.get(record.group, 0) + 1
        self.group_sizes.append([sizes[g] for g in sorted(sizes)])


def _cache_key(config: dict[str, Any]) -> str:
    blob = json.dumps({"v": CACHE_VERSION, "config": config, "eval": [EVAL_PROBLEMS, EVAL_SAMPLES, EVAL_SEED, GREEDY_PROBLEMS]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _evaluate(model_dir: str) -> dict[str, float]:
    """Held-out greedy accuracy (GREEDY_PROBLEMS fresh additions) and sampled accuracy at the training
    temperature (EVAL_SAMPLES samples of EVAL_PROBLEMS additions): GRPO trains the sampling distribution,
    and on the tiny model the greedy answer barely moves in a hundred steps while the sampled one does.
    """
    import random

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data import addition_prompt
    from trainer.models.tiny_model import greedy_addition_accuracy

    model, tok = AutoModelForCausalLM.from_pretrained(model_dir).eval(), AutoTokenizer.from_pretrained(model_dir)
    rng = random.Random(EVAL_SEED)
    pairs = [(rng.randint(0, 99), rng.randint(0, 99)) for _ in range(EVAL_PROBLEMS)]
    enc = tok([addition_prompt(a, b) for a, b in pairs], return_tensors="pt", padding=True, padding_side="left")
    torch.manual_seed(EVAL_SEED)
    with torch.no_grad():
        out = model.generate(  # type: ignore[operator]
            **enc, max_new_tokens=6, do_sample=True, temperature=1.0, top_k=0, num_return_sequences=EVAL_SAMPLES,
            pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        )
    texts = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    answers = [str(a + b) for a, b in pairs for _ in range(EVAL_SAMPLES)]
    sampled = sum(t.split("\n")[0].strip() == ans for t, ans in zip(texts, answers, strict=True)) / len(texts)
    return {"accuracy": greedy_addition_accuracy(model, tok, n=GREEDY_PROBLEMS), "sampled_accuracy": sampled}


def run_arm(
    overrides: dict[str, Any], seed: int, steps: int, eval_every: int, cache_dir: Path, use_cache: bool = True
) -> ArmResult:
    """Train one arm (or load it from the cache) and evaluate the policy every ``eval_every`` steps."""
    from trainer.config import config_from_dict
    from trainer.models.checkpoint import list_checkpoints
    from trainer.models.tiny_model import resolve_model_path
    from trainer.step.loop import train

    probe = arm_config(overrides, seed, steps, "<run-dir>", eval_every)
    cached = cache_dir / f"{_cache_key(probe)}.json"
    if use_cache and cached.is_file():
        return ArmResult.from_json(json.loads(cached.read_text()))

    run_dir = Path(tempfile.mkdtemp(prefix="reproduce-"))
    try:
        config = config_from_dict(arm_config(overrides, seed, steps, str(run_dir), eval_every), source="reproduce arm")
        sink = MemorySink()
        t0 = time.perf_counter()
        train(config, sink=sink, log=lambda _msg: None)
        wall = time.perf_counter() - t0
        cumulative, running = [0.0], 0.0
        for m in sink.metrics:
            running += m.get("budget/rollouts_generated", m["_completions"])
            cumulative.append(running)
        evals = [{"step": 0, "cumulative_rollouts": 0.0, **_evaluate(resolve_model_path(config.model.name_or_path))}]
        for ckpt in list_checkpoints(run_dir):
            step = int(ckpt.name.removeprefix("step-"))
            evals.append({"step": step, "cumulative_rollouts": cumulative[step], **_evaluate(str(ckpt))})
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    result = ArmResult(sink.metrics, evals, wall, {"group_sizes_first_steps": sink.group_sizes[:5]})
    cache_dir.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result.to_json()))
    return result
