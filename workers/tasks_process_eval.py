"""The reward evaluation's ``process`` part (workers/tasks_reward_eval.py calls it): each step scorer among the job's
sources (a PRM version or folder, the chain oracle, Monte-Carlo values) scored step by step and evaluated as a PRM.

On the Best-of-N samples the job already generated (its cache, so nothing is sampled again; their token ids are in
it, or re-tokenized from the text for a cache written before they were), the first ``process.problems`` problems and
``process.samples_per_problem`` samples of each are cut into steps (``process.segmenter``) and scored with
trainer/process/evaluation.py's ``score_problems``; then ProcessBench's first-error F1 against the chain oracle,
the step calibration and the PRM Best-of-N curve (``process.aggregate``), beside the scalar sources' Best-of-N curves
recomputed on exactly these samples, with the same majority-vote, random and pass@N baselines. With ``process.labels``
(an uploaded Math-Shepherd or PRM800K file) a PRM's first-error F1 and calibration are measured on the file's own
steps instead. Progress goes through the job's ``progress`` (which raises once a cancel was asked for, keeping the
sources already evaluated). Imports the trainer inside the functions, as the other tasks do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from trainer.evaluation.config import BenchmarkConfig
    from trainer.evaluation.engine import ProblemResult
    from trainer.process.evaluation import StepScoredSample
    from trainer.rewards.evaluation_process import ProcessSpec
    from trainer.samples import Sample

LABELS_NOTE = (
    "scored against the chain oracle on the Best-of-N samples: a step-labelled file carries no answer, which the "
    "chain oracle and Monte Carlo need"
)
NO_REFERENCE_NOTE = (
    "no first-error reference: the benchmark's oracle is not chain_arithmetic, so no step is known to be wrong; "
    "give process.labels (a step-labelled file)"
)


class Progress(Protocol):
    cancelled: bool

    def __call__(self, phase: str, done: int, total: int, *, force: bool = False) -> None: ...


class _Context:
    """What every process source shares: the samples as the scorers take them, the oracle and the policy's parts."""

    def __init__(self, problems: list[ProblemResult], owners: list[Sample], tokenizer: Any, chain: Any,
                 verifier: Any, config: BenchmarkConfig) -> None:  # fmt: skip
        self.problems, self.owners, self.tokenizer = problems, owners, tokenizer
        self.chain, self.verifier, self.config = chain, verifier, config
        self.engine: Any = None  # the policy's rollout engine, loaded for Monte Carlo only


def process_part(
    inputs: dict[str, Any],
    rows: list[dict[str, Any]],
    result: dict[str, Any],
    progress: Progress,
    bon: tuple[list[dict[str, Any]], list[Sample], BenchmarkConfig] | None,
    orm_scores: dict[int, list[float]],
) -> None:
    """Fill ``row["process"]`` of every process source and ``result["process"]`` (module docstring). ``bon``: the
    Best-of-N part's (problems, samples, benchmark config), None without that part; ``orm_scores``: each scalar
    source's score of every Best-of-N sample, problem-major."""
    from trainer.rewards.evaluation_process import PROCESS_KIND, ProcessSpec

    spec = ProcessSpec.model_validate(inputs["process"])
    result["process"] = {
        "aggregate": spec.aggregate, "threshold": spec.threshold, "bins": spec.bins,
        "segmenter": spec.segmenter.name, "reference": "labels" if spec.labels else "chain_oracle",
    }  # fmt: skip
    context = _context(inputs, spec, bon, progress) if bon is not None else None
    base: dict[str, list[float]] | None = None
    if context is not None:
        base = _shared_best_of_n(context, spec, inputs, rows, orm_scores, result, bon)
    labels = _labels(inputs, spec) if spec.labels else None
    for row, entry in zip(rows, inputs["sources"], strict=True):
        if entry.get("kind") != PROCESS_KIND:
            continue
        t0 = time.perf_counter()
        out: dict[str, Any] = {"scorer": entry["name"]}
        if context is not None:
            first_error = labels is None
            out.update(
                _on_samples(
                    context, spec, inputs, entry, row, progress, base, use_for_first_error=first_error
                )
            )
        if labels is not None:
            out.update(_on_labels(labels, spec, inputs, entry, row, progress))
        row["process"] = out
        row["scoring_s"] += time.perf_counter() - t0


def _context(inputs: dict[str, Any], spec: ProcessSpec, bon: Any, progress: Progress) -> _Context:
    """The Best-of-N samples cut to the part's problems and samples, as ``ProblemResult``s with token ids."""
    from trainer.data import render_prompt
    from trainer.evaluation.engine import ProblemResult, SampleResult
    from trainer.process.records import chain_params_of
    from trainer.verifiers.scoring import build_verifiers

    problems, samples, config = bon
    by_id = {s.id: s for s in samples}
    keep = problems[: spec.problems or len(problems)]
    k = spec.samples_per_problem or min(len(p["texts"]) for p in keep)
    progress("process: loading the policy's tokenizer", 0, 1, force=True)
    tokenizer = _policy_tokenizer(inputs["best_of_n"]["policy"])
    out: list[ProblemResult] = []
    for p in keep:
        ids = p.get("token_ids") or [tokenizer(t, add_special_tokens=False)["input_ids"] for t in p["texts"]]
        sample_results = [
            SampleResult(index=j, text=p["texts"][j], token_ids=list(ids[j]), tokens=[], logprobs=[],
                         finish_reason="eos", length=len(ids[j]), reward=float(p["correct"][j]),
                         correct=bool(p["correct"][j]), extracted_answer=p["answers"][j])
            for j in range(k)
        ]  # fmt: skip
        owner = by_id[p["id"]]
        prompt = render_prompt(owner, config.data, tokenizer)
        out.append(ProblemResult(p["id"], prompt, owner.answer, inputs["seed"], sample_results))
    verifiers = build_verifiers(config.verifiers)
    return _Context(out, [by_id[p["id"]] for p in keep], tokenizer, chain_params_of(verifiers), verifiers[0][1],
                    config)  # fmt: skip


def _policy_tokenizer(policy: str) -> Any:
    from transformers import AutoTokenizer

    from trainer.models.checkpoint import resolve_checkpoint_dir
    from trainer.models.tiny_model import resolve_model_path

    path = Path(resolve_model_path(policy))
    if not (path / "config.json").exists() and not (path / "tokenizer_config.json").exists():
        path = resolve_checkpoint_dir(path)
    return AutoTokenizer.from_pretrained(str(path))


def _groups(context: _Context, rows: Sequence[Sequence[float]] | None = None) -> list[list[StepScoredSample]]:
    from trainer.process.evaluation import StepScoredSample

    it = iter(rows) if rows is not None else None
    return [
        [StepScoredSample(s.extracted_answer, s.correct, list(next(it)) if it is not None else []) for s in p.samples]
        for p in context.problems
    ]  # fmt: skip


def _ns(k: int) -> list[int]:
    from trainer.rewards.evaluation import DEFAULT_NS

    return [n for n in DEFAULT_NS if n <= k] + ([k] if k not in DEFAULT_NS else [])


def _shared_best_of_n(
    context: _Context, spec: ProcessSpec, inputs: dict[str, Any], rows: list[dict[str, Any]],
    orm_scores: dict[int, list[float]], result: dict[str, Any], bon: Any,
) -> dict[str, list[float]]:  # fmt: skip
    """The baselines on the part's samples and each scalar source's (ORM) curve on exactly them."""
    from trainer.process.evaluation import baselines_of, orm_best_of_n

    k = len(context.problems[0].samples)
    ns = _ns(k)
    groups = _groups(context)
    base = baselines_of(groups, ns, seed=inputs["seed"])
    all_problems = bon[0]
    per_problem = len(all_problems[0]["texts"]) if all_problems else 0
    orm = []
    for i, scores in sorted(orm_scores.items()):
        table = [scores[j * per_problem : j * per_problem + k] for j in range(len(context.problems))]
        curve = orm_best_of_n(groups, table, ns, seed=inputs["seed"], baselines=base,
                              resamples=min(inputs["bootstrap_resamples"], 1000))  # fmt: skip
        orm.append({"label": rows[i]["label"], **curve.to_json()})
    result["process"]["best_of_n"] = {
        "ns": ns, "problems": len(context.problems), "samples_per_problem": k, "baselines": base, "orm": orm,
        "same_samples": len(context.problems) == len(all_problems) and k == per_problem,
    }  # fmt: skip
    return base


def _engine(context: _Context, policy: str) -> Any:
    if context.engine is None:
        from trainer.evaluation.engine import load_policy
        from trainer.rollout import HFRolloutEngine

        model, tokenizer = load_policy(policy, "auto")
        context.engine = HFRolloutEngine(model, tokenizer)
    return context.engine


def _on_samples(
    context: _Context, spec: ProcessSpec, inputs: dict[str, Any], entry: dict[str, Any], row: dict[str, Any],
    progress: Progress, base: dict[str, list[float]] | None, *, use_for_first_error: bool,
) -> dict[str, Any]:  # fmt: skip
    """Score the samples' steps with the source; its first-error F1 and calibration against the chain oracle (when
    the part has no labels file, or the source cannot score one) and its PRM Best-of-N curve."""
    import torch

    from trainer.process.evaluation import MC_BEST_OF_N_NOTE, prm_best_of_n, score_problems
    from trainer.rollout.base import SamplingParams

    label, mc = row["label"], entry["name"] == "monte_carlo"
    extra: dict[str, Any] = {}
    if mc:
        config = context.config
        extra = {"engine": _engine(context, inputs["best_of_n"]["policy"]),
                 "sampling": SamplingParams(config.max_tokens, *config.sampling(), config.batch_size),
                 "generator": torch.Generator().manual_seed(inputs["seed"] + 1)}  # fmt: skip
    k = len(context.problems[0].samples)
    per_batch = max(1, min(16, int(entry["params"].get("max_prefixes", 8192)) // (k * 8))) if mc else 16

    def tick(done: int, total: int) -> None:
        progress(f"process: {label}", done, total)

    tick(0, len(context.problems))
    scored = score_problems(
        context.problems, context.owners, scorer=entry["name"], scorer_params=entry["params"],
        tokenizer=context.tokenizer, segmenter=spec.segmenter, chain_params=context.chain,
        verifier=context.verifier, problems_per_batch=per_batch, progress=tick,
        should_stop=lambda: progress.cancelled, **extra,
    )  # fmt: skip
    row["scored"] += sum(len(p.samples) for p in context.problems)
    steps = [v for r in scored.scores for v in r]
    out: dict[str, Any] = {
        "samples": len(scored.scores), "steps_mean": len(steps) / max(len(scored.scores), 1),
        "absent_steps": sum(1 for v in steps if not math.isfinite(v)),
        "mc_tokens": scored.metrics.get("process/mc_tokens"),
    }  # fmt: skip
    if use_for_first_error or entry["name"] != "prm":
        out.update(_against_oracle(scored, spec, inputs))
        if not use_for_first_error:
            out["note"] = LABELS_NOTE
    if base is not None:
        curve = prm_best_of_n(_groups(context, scored.scores), spec.aggregate, _ns(k), seed=inputs["seed"],
                              resamples=min(inputs["bootstrap_resamples"], 1000), baselines=base)  # fmt: skip
        out["best_of_n"] = curve.to_json()
        if mc:
            out["best_of_n_note"] = MC_BEST_OF_N_NOTE
    return out


def _against_oracle(scored: Any, spec: ProcessSpec, inputs: dict[str, Any]) -> dict[str, Any]:
    from trainer.process.evaluation import first_error_evaluation, oracle_step_labels, step_calibration

    known = [i for i, ok in enumerate(scored.known) if ok]
    if not known:
        return {
            "reference": "chain_oracle",
            "first_error": None,
            "calibration": None,
            "note": NO_REFERENCE_NOTE,
        }
    rows = [scored.scores[i] for i in known]
    refs = [scored.references[i] for i in known]
    first = first_error_evaluation(rows, refs, threshold=spec.threshold, seed=inputs["seed"],
                                   resamples=inputs["bootstrap_resamples"])  # fmt: skip
    labels = [oracle_step_labels(scored.references[i], len(scored.spans[i])) for i in known]
    calibration = step_calibration(rows, labels, bins=spec.bins)
    return {"reference": "chain_oracle", "first_error": first.to_json(), "calibration": calibration.to_json()}


def _labels(inputs: dict[str, Any], spec: ProcessSpec) -> Any:
    from trainer.process.prm_training import file_labels

    assert spec.labels is not None
    examples, provenance = file_labels(
        Path(inputs["process_labels_path"]), spec.labels.format, max_examples=spec.labels.max_examples
    )
    return examples, provenance


def _on_labels(
    labels: Any, spec: ProcessSpec, inputs: dict[str, Any], entry: dict[str, Any], row: dict[str, Any],
    progress: Progress,
) -> dict[str, Any]:  # fmt: skip
    """A PRM's first-error F1 and calibration on the uploaded file's own steps against its labels."""
    from trainer.process.evaluation import first_error_evaluation, score_step_examples, step_calibration

    if entry["name"] != "prm":
        return {}
    examples, provenance = labels
    label = row["label"]
    tokenizer = _policy_tokenizer(entry["params"]["model"])
    scores, refs = score_step_examples(
        examples, scorer="prm", scorer_params=entry["params"], tokenizer=tokenizer,
        progress=lambda done, total: progress(f"process (labels): {label}", done, total),
        should_stop=lambda: progress.cancelled,
    )  # fmt: skip
    row["scored"] += len(scores)
    first = first_error_evaluation(scores, refs, threshold=spec.threshold, seed=inputs["seed"],
                                   resamples=inputs["bootstrap_resamples"])  # fmt: skip
    calibration = step_calibration(scores, [ex.labels for ex in examples[: len(scores)]], bins=spec.bins)
    return {
        "reference": "labels", "first_error": first.to_json(), "calibration": calibration.to_json(),
        "labels": {"examples": len(scores), **{k: provenance[k] for k in ("format", "skipped", "first_problem")}},
    }  # fmt: skip
