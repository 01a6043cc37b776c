"""One arm (a config and a seed): train it with an in-memory sink, evaluate its checkpoints, store the result.

An arm's result is stored as ``<store>/<key>.json.gz``; the key hashes everything that can change its numbers:
the code revision (provenance.code_revision), the hashes of the model files it starts from (policy, teacher,
and any prior file's contents), the full config, the step count and the evaluation spec. A stored result is
therefore reused only by the same code on the same models with the same config, and a run that stops
half-way resumes with the arms it had finished. The stored file holds every step's metrics and every
checkpoint's held-out evaluation (the raw per-seed curves), and says which code revision, git commit and
models produced it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import arm_config
from benchmarks.reproduce.evaluation import EVAL, EvalSpec, evaluate
from benchmarks.reproduce.measures import ArmResult
from benchmarks.reproduce.provenance import code_revision, git_commit, model_hash
from trainer.sinks import NullSink, StepReport

STORE_VERSION = 3  # bump when what an arm records changes


@dataclass(frozen=True)
class ArmSpec:
    """What to train: the overrides on the baseline, a seed, the length, and a cost paid before training."""

    overrides: dict[str, Any]
    seed: int
    steps: int
    eval_every: int
    eval: EvalSpec = EVAL
    prepare_cost: dict[str, float] = field(default_factory=dict)  # rollouts/tokens/wall_s of an offline pass

    def config(self, output_dir: str) -> dict[str, Any]:
        return arm_config(self.overrides, self.seed, self.steps, output_dir, self.eval_every)


class MemorySink(NullSink):
    """Keeps every step's metrics (and the group sizes of its rollout records) in memory."""

    def __init__(self) -> None:
        self.metrics: list[dict[str, float]] = []
        self.group_sizes: list[list[int]] = []

    def on_step(self, report: StepReport) -> None:
        metrics = {k: _round(v) for k, v in report.metrics.items()}
        metrics["_completions"] = float(len(report.rollouts))
        self.metrics.append(metrics)
        sizes: dict[int, int] = {}
        for record in report.rollouts:
            sizes[record.group] = sizes.get(record.group, 0) + 1
        self.group_sizes.append([sizes[g] for g in sorted(sizes)])


def _round(value: float) -> float:
    """Six significant digits: the stored curves stay small and the figures do not need more."""
    return float(f"{value:.6g}") if math.isfinite(value) else value


def _models(config: dict[str, Any]) -> dict[str, str]:
    """{role: model hash} of the model directories and files the config starts from."""
    from trainer.models.tiny_model import resolve_model_path

    out = {"policy": model_hash(str(resolve_model_path(config["model"]["name_or_path"])))}
    teacher = (config.get("teacher") or {}).get("name_or_path")
    if teacher:
        out["teacher"] = model_hash(str(resolve_model_path(teacher)))
    scorer = (config.get("process_reward") or {}).get("scorer") or {}
    scorer_model = (scorer.get("params") or {}).get("model")
    if scorer_model:  # a step scorer's model (the tiny chain PRM is built on first use)
        from trainer.process.records import step_scorer_model

        out["step_scorer"] = model_hash(step_scorer_model(scorer_model))
    prior = (config.get("budget") or {}).get("prior_file")
    if prior:
        out["prior_file"] = hashlib.sha256(Path(prior).read_bytes()).hexdigest()[:16]
    return out


def _keyed_config(config: dict[str, Any]) -> dict[str, Any]:
    """The config as keyed: file paths (which differ between checkouts) replaced by the hashes in ``_models``."""
    keyed = json.loads(json.dumps(config))
    if (keyed.get("budget") or {}).get("prior_file"):
        keyed["budget"]["prior_file"] = "<hashed>"
    return keyed


def arm_key(spec: ArmSpec) -> tuple[str, dict[str, Any]]:
    """(key, provenance) of ``spec`` at the current code revision and model files."""
    config = spec.config("<run-dir>")
    provenance = {"v": STORE_VERSION, "code_revision": code_revision(), "models": _models(config)}
    blob = json.dumps(
        {**provenance, "config": _keyed_config(config), "eval": spec.eval.to_json()}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20], provenance


def load_arm(path: Path) -> ArmResult:
    with gzip.open(path, "rt") as f:
        return ArmResult.from_json(json.load(f))


def stored_path(store: Path, key: str) -> Path:
    return store / f"{key}.json.gz"


def _start_evaluation(store: Path, model_dir: str, spec: EvalSpec, exclude: frozenset[str]) -> dict[str, Any]:
    """The starting model's evaluation, shared by every arm that starts from it (stored like an arm)."""
    blob = json.dumps(
        {
            "v": STORE_VERSION,
            "code": code_revision(),
            "model": model_hash(model_dir),
            "eval": spec.to_json(),
            "exclude": sorted(exclude),
        },
        sort_keys=True,
    )
    path = store / "start" / f"{hashlib.sha256(blob.encode()).hexdigest()[:20]}.json"
    if path.is_file():
        return dict(json.loads(path.read_text()))
    result = evaluate(model_dir, spec, exclude, final=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(path)
    return result


def run_arm(spec: ArmSpec, store: Path, use_store: bool = True) -> ArmResult:
    """Train one arm (or load it from the store) and evaluate the policy every ``eval_every`` steps."""
    key, provenance = arm_key(spec)
    path = stored_path(store, key)
    if use_store and path.is_file():
        return load_arm(path)

    from trainer.config import config_from_dict
    from trainer.models.checkpoint import list_checkpoints
    from trainer.models.tiny_model import resolve_model_path
    from trainer.step.loop import train

    run_dir = Path(tempfile.mkdtemp(prefix="reproduce-"))
    try:
        config = config_from_dict(spec.config(str(run_dir)), source="reproduce arm")
        sink = MemorySink()
        t0 = time.perf_counter()
        train(config, sink=sink, log=lambda _msg: None)
        wall = time.perf_counter() - t0
        from trainer.data import load_samples

        exclude = frozenset(s.prompt for s in load_samples(config.data))
        rollouts, tokens = [0.0], [0.0]
        for m in sink.metrics:
            rollouts.append(rollouts[-1] + m.get("budget/rollouts_generated", m["_completions"]))
            tokens.append(tokens[-1] + m.get("budget/tokens_generated", 0.0))
        t1 = time.perf_counter()
        checkpoints = {int(c.name.removeprefix("step-")): c for c in list_checkpoints(run_dir)}
        start = _start_evaluation(
            store, str(resolve_model_path(config.model.name_or_path)), spec.eval, exclude
        )
        evals = [{"step": 0, "cumulative_rollouts": 0.0, "cumulative_tokens": 0.0, **start}]
        for step in sorted(checkpoints):
            evals.append(
                {
                    "step": step,
                    "cumulative_rollouts": rollouts[step],
                    "cumulative_tokens": tokens[step],
                    **evaluate(str(checkpoints[step]), spec.eval, exclude, final=step == spec.steps),
                }
            )
        eval_s = time.perf_counter() - t1
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    if evals[-1]["step"] != spec.steps:
        raise RuntimeError(
            f"arm {key}: no checkpoint at the last step {spec.steps} (steps must be a multiple of eval_every)"
        )
    extra = {
        "key": key,
        **provenance,
        "git_commit": git_commit(),
        "seed": spec.seed,
        "steps": spec.steps,
        "eval": spec.eval.to_json(),
        "eval_s": eval_s,
        "prepare_cost": spec.prepare_cost,
        "overrides": spec.overrides,
        "group_sizes_first_steps": sink.group_sizes[:5],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    result = ArmResult(sink.metrics, evals, wall, extra)
    store.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(result.to_json(), f, separators=(",", ":"))
    tmp.replace(path)  # whole or absent: a crash mid-write leaves no half result
    return result
