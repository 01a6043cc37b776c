"""Work a method does before training that the table must count: ThinkPrior's offline anchor pass.

``anchor_pass_rates`` samples the anchor model ``ANCHOR_SAMPLES`` times per training prompt, scores the
completions with the run's verifiers, and writes the per-prompt pass rates the beta_learnability sampler
reads (budget.prior_file). The arm's key holds the pass's declared spec (``ANCHOR_PASS``: the anchor's name,
samples, seed), never the file's content, so the key is known before the pass runs. The file and what the pass
cost (rollouts, completion tokens, seconds) are kept in the arm store under a key of that spec and the
data/rollout/verifier config, so it runs once for every seed and every later invocation; each arm that uses it
carries its cost, and the file's content hash is recorded in the arm's provenance.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import TEACHER
from benchmarks.reproduce.store import PrepareSpec

ANCHOR = TEACHER  # an external model, as in ThinkPrior: here the built-in chain teacher
ANCHOR_SAMPLES = 8  # completions per prompt in the anchor's offline pass
ANCHOR_SEED = 1234
ANCHOR_PASS = PrepareSpec(
    "benchmarks.reproduce.prepare:anchor_pass_rates",
    {"anchor": ANCHOR, "samples": ANCHOR_SAMPLES, "seed": ANCHOR_SEED, "writes": "budget.prior_file"},
)


def prepared_path(store: Path, config: dict[str, Any], spec: dict[str, Any]) -> Path:
    """Where the pass for ``spec`` on ``config``'s training prompts is kept (no code or weight hash in it)."""
    blob = {
        "spec": spec,
        "data": config["data"],
        "rollout": config["rollout"],
        "verifiers": config["verifiers"],
    }
    key = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]
    return store / "prepared" / f"anchor-{key}.json"  # {prompt id: pass rate}, as budget.prior_file reads it


def anchor_pass_rates(
    store: Path, config: dict[str, Any], spec: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, float]]:
    """(config overrides pointing at the prior file, the pass's cost) for ``config``'s training prompts."""
    from benchmarks.reproduce.provenance import model_hash
    from trainer.models.tiny_model import resolve_model_path

    anchor_dir = str(resolve_model_path(spec["anchor"]))
    path = prepared_path(store, config, spec)
    about = path.with_suffix(".cost.json")  # the spec it was made from, the anchor's hash and what it cost
    current = about.is_file() and json.loads(about.read_text()).get("anchor_hash") == model_hash(anchor_dir)
    if not (path.is_file() and current):  # absent, or made from other anchor weights: run the pass again
        path.parent.mkdir(parents=True, exist_ok=True)
        rates, cost = _anchor_pass(anchor_dir, config, int(spec["samples"]), int(spec["seed"]))
        made = {"spec": spec, "anchor_hash": model_hash(anchor_dir), "cost": cost}
        for target, payload in ((path, rates), (about, made)):
            tmp = target.with_suffix(".tmp")
            tmp.write_text(json.dumps(payload, sort_keys=True))
            tmp.replace(target)
    stored = json.loads(about.read_text())
    return {"budget": {"prior_file": str(path)}}, stored["cost"]


def _anchor_pass(
    anchor_dir: str, baseline_config: dict[str, Any], samples_per_prompt: int, seed: int
) -> tuple[dict[str, float], dict[str, float]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.config import config_from_dict
    from trainer.data import load_samples, render_prompt
    from trainer.rollout import HFRolloutEngine, SamplingParams
    from trainer.verifiers.scoring import build_verifiers, score_batch

    t0 = time.perf_counter()
    config = config_from_dict(baseline_config, source="anchor pass")
    model, tok = (
        AutoModelForCausalLM.from_pretrained(anchor_dir).eval(),
        AutoTokenizer.from_pretrained(anchor_dir),
    )
    k = samples_per_prompt
    samples = load_samples(config.data)
    prompts = [render_prompt(s, config.data, tok) for s in samples for _ in range(k)]
    r = config.rollout
    batch = HFRolloutEngine(model, tok).generate(
        prompts,
        SamplingParams(r.max_completion_length, r.temperature, batch_size=256),
        torch.Generator().manual_seed(seed),
    )
    scores = score_batch(
        build_verifiers(config.verifiers),
        config.reward_weights,
        batch.texts,
        [s for s in samples for _ in range(k)],
    )
    rates = {s.id: sum(scores.correct[i * k : (i + 1) * k]) / k for i, s in enumerate(samples)}
    cost = {
        "rollouts": float(len(batch)),
        "tokens": float(batch.lengths.sum()),
        "wall_s": time.perf_counter() - t0,
    }
    return rates, cost
