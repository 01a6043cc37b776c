"""Work a method does before training that the table must count: ThinkPrior's offline anchor pass.

``anchor_pass_rates`` samples the anchor model ``ANCHOR_SAMPLES`` times per training prompt, scores the
completions with the run's verifiers, and writes the per-prompt pass rates the beta_learnability sampler
reads (budget.prior_file). The file and what the pass cost (rollouts, completion tokens, seconds) are kept in
the arm store under a key of the code revision, the anchor's model hash and the data/rollout config, so it
runs once for every seed and every later invocation; each arm that uses it carries its cost.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import TEACHER
from benchmarks.reproduce.provenance import code_revision, model_hash

ANCHOR = TEACHER  # an external model, as in ThinkPrior: here the built-in chain teacher
ANCHOR_SAMPLES = 8  # completions per prompt in the anchor's offline pass
ANCHOR_SEED = 1234


def anchor_pass_rates(
    store: Path, baseline_config: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, float]]:
    """(config overrides pointing at the prior file, the pass's cost) for ``baseline_config``'s training prompts."""
    from trainer.models.tiny_model import resolve_model_path

    anchor_dir = str(resolve_model_path(ANCHOR))
    spec = {
        "code": code_revision(),
        "anchor": model_hash(anchor_dir),
        "samples": ANCHOR_SAMPLES,
        "seed": ANCHOR_SEED,
        "data": baseline_config["data"],
        "rollout": baseline_config["rollout"],
        "verifiers": baseline_config["verifiers"],
    }
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    path = store / "prepared" / f"anchor-{key}.json"  # {prompt id: pass rate}, as budget.prior_file reads it
    about = path.with_suffix(".cost.json")  # the spec it was made from and what it cost
    if not (path.is_file() and about.is_file()):
        path.parent.mkdir(parents=True, exist_ok=True)
        rates, cost = _anchor_pass(anchor_dir, baseline_config)
        for target, payload in ((path, rates), (about, {"spec": spec, "cost": cost})):
            tmp = target.with_suffix(".tmp")
            tmp.write_text(json.dumps(payload, sort_keys=True))
            tmp.replace(target)
    stored = json.loads(about.read_text())
    return {"budget": {"prior_file": str(path)}}, stored["cost"]


def _anchor_pass(
    anchor_dir: str, baseline_config: dict[str, Any]
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
    samples = load_samples(config.data)
    prompts = [render_prompt(s, config.data, tok) for s in samples for _ in range(ANCHOR_SAMPLES)]
    r = config.rollout
    batch = HFRolloutEngine(model, tok).generate(
        prompts,
        SamplingParams(r.max_completion_length, r.temperature, batch_size=256),
        torch.Generator().manual_seed(ANCHOR_SEED),
    )
    scores = score_batch(
        build_verifiers(config.verifiers),
        config.reward_weights,
        batch.texts,
        [s for s in samples for _ in range(ANCHOR_SAMPLES)],
    )
    rates = {
        s.id: sum(scores.correct[i * ANCHOR_SAMPLES : (i + 1) * ANCHOR_SAMPLES]) / ANCHOR_SAMPLES
        for i, s in enumerate(samples)
    }
    cost = {
        "rollouts": float(len(batch)),
        "tokens": float(batch.lengths.sum()),
        "wall_s": time.perf_counter() - t0,
    }
    return rates, cost
