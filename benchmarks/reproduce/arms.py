"""One arm (a config and a seed): train it with an in-memory sink, evaluate its checkpoints, store the result.

An arm is stored as ``<store>/<key>.json.gz`` under the key of what was trained (store.py: the config with model
names, the seed, the steps, the evaluation spec, an offline pass's declared spec), so a run that stops half-way
resumes with the arms it had finished, and a later change to the code keeps them. The stored file holds every
step's metrics and every checkpoint's held-out evaluation (the raw per-seed curves) and its provenance: the git
commit, code revision, lock file hash, library versions, model hashes and the full resolved config
(provenance.record). Training imports torch; nothing else in the harness that reads the store does.
"""

from __future__ import annotations

import importlib
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.reproduce.baseline import deep_merge
from benchmarks.reproduce.evaluation import EvalSpec, evaluate
from benchmarks.reproduce.measures import ArmResult
from benchmarks.reproduce.provenance import code_revision, model_hash, record
from benchmarks.reproduce.store import ArmSpec, arm_key, keyed, load_arm, stored_path, write_arm
from trainer.sinks import NullSink, StepReport


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
        for record_ in report.rollouts:
            sizes[record_.group] = sizes.get(record_.group, 0) + 1
        self.group_sizes.append([sizes[g] for g in sorted(sizes)])


def _round(value: float) -> float:
    """Six significant digits: the stored curves stay small and the figures do not need more."""
    return float(f"{value:.6g}") if math.isfinite(value) else value


def resolved_config(spec: ArmSpec, store: Path, output_dir: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The arm's config with its offline pass run (or read from the store), and that pass's cost."""
    config = spec.config(output_dir)
    if spec.prepare is None:
        return config, {}
    module, _, name = spec.prepare.fn.partition(":")
    fn = getattr(importlib.import_module(module), name)
    extra, cost = fn(store, config, spec.prepare.spec)
    return deep_merge(config, extra), dict(cost)


def _start_evaluation(store: Path, model_dir: str, spec: EvalSpec, exclude: frozenset[str]) -> dict[str, Any]:
    """The starting model's evaluation, shared by every arm that starts from it (a training-time cache, keyed by
    the code revision and the model's weights)."""
    import hashlib
    import json

    blob = json.dumps(
        {
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


def train_arm(
    spec: ArmSpec, store: Path, stop_after: int | None = None, eval_spec: EvalSpec | None = None
) -> ArmResult:
    """Train ``spec`` now (nothing is read from or written to the store but its offline pass and start cache).

    ``stop_after`` ends training after that many steps (a short pass: reach.py, retrain.py) and evaluates the
    checkpoint it saves with ``eval_spec`` (default the arm's own).
    """
    from trainer.config import config_from_dict
    from trainer.data import load_samples
    from trainer.models.checkpoint import list_checkpoints
    from trainer.models.tiny_model import resolve_model_path
    from trainer.step.loop import train

    run_dir = Path(tempfile.mkdtemp(prefix="reproduce-"))
    evaluation = eval_spec or spec.eval
    last = spec.steps if stop_after is None else stop_after
    try:
        raw, cost = resolved_config(spec, store, str(run_dir))
        config = config_from_dict(raw, source="reproduce arm")
        sink = MemorySink()
        stop: Callable[[], bool] = (
            (lambda: False) if stop_after is None else (lambda: len(sink.metrics) >= last)
        )
        t0 = time.perf_counter()
        train(config, sink=sink, should_stop=stop, log=lambda _msg: None)
        wall = time.perf_counter() - t0
        exclude = frozenset(s.prompt for s in load_samples(config.data))
        rollouts, tokens = [0.0], [0.0]
        for m in sink.metrics:
            rollouts.append(rollouts[-1] + m.get("budget/rollouts_generated", m["_completions"]))
            tokens.append(tokens[-1] + m.get("budget/tokens_generated", 0.0))
        t1 = time.perf_counter()
        checkpoints = {int(c.name.removeprefix("step-")): c for c in list_checkpoints(run_dir)}
        start = _start_evaluation(
            store, str(resolve_model_path(config.model.name_or_path)), evaluation, exclude
        )
        evals = [{"step": 0, "cumulative_rollouts": 0.0, "cumulative_tokens": 0.0, **start}]
        for step in sorted(s for s in checkpoints if s <= last):
            evals.append(
                {
                    "step": step,
                    "cumulative_rollouts": rollouts[step],
                    "cumulative_tokens": tokens[step],
                    **evaluate(str(checkpoints[step]), evaluation, exclude, final=step == last),
                }
            )
        eval_s = time.perf_counter() - t1
        provenance = record(raw)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    if evals[-1]["step"] != last:
        raise RuntimeError(
            f"arm {arm_key(spec)}: no checkpoint at the last step {last} (steps must be a multiple of eval_every)"
        )
    extra = {
        "key": arm_key(spec),
        "keyed": keyed(spec),
        "spec": spec.to_json(),
        "seed": spec.seed,
        "steps": spec.steps,
        "eval": evaluation.to_json(),
        "eval_s": eval_s,
        "prepare_cost": cost,
        "overrides": spec.overrides,
        "group_sizes_first_steps": sink.group_sizes[:5],
        "provenance": {**provenance, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
    }
    # the fields older readers look for at the top level
    extra.update(code_revision=provenance["code_revision"], git_commit=provenance["git_commit"])
    extra.update(models=provenance["models"], processor=provenance["processor"])
    return ArmResult(sink.metrics, evals, wall, extra)


def run_arm(spec: ArmSpec, store: Path, use_store: bool = True) -> ArmResult:
    """Train one arm (or load it from the store) and store it, replacing any stored one when ``use_store`` is
    False (``--retrain-stale``)."""
    path = stored_path(store, arm_key(spec))
    if use_store and path.is_file():
        return load_arm(path)
    result = train_arm(spec, store)
    write_arm(path, result)
    return result
