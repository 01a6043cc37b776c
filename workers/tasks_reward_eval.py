"""The ``eval`` queue's reward-source evaluation: score held-out pairs, Best-of-N samples, the judge audit and an
annotation task's items with every source of a ``RewardJob(kind=evaluate)``, and store the figures side by side.

The statistics are trainer/rewards/evaluation.py's; the reads and writes are webapp/rewards' evaluation services and
selectors. The Best-of-N samples are generated once per job by the evaluation engine (trainer/evaluation/engine.py:
k seeded samples per problem, verified by the benchmark's oracle) and cached in RLVR_DATA_DIR/reward-evaluations/job-<id>/,
so a re-delivered job (late acknowledgement) does not sample again; then each source scores them in batches.
A rubric source (trainer/rewards/evaluation.py's ``RubricSource``) scores its criteria in the same batches and then
aggregates each phase's scores with their groups: a Best-of-N problem's samples, a pair, an annotation prompt's items
(its judge model, when a criterion needs one, is loaded here on the CPU).
Step scorers among the sources (``kind: process``) take no part in these parts: workers/tasks_process_eval.py evaluates
them as PRMs in the ``process`` part, on the same cached Best-of-N samples, beside the other sources' curves.
Progress (phase, done, total) is written at most once a second, and each write reads the cancel flag: a cancelled
job stops at its next batch and keeps what it had computed. Like the other tasks it takes an id and imports the
trainer inside its body (the web process imports this module's name only).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import Task

from workers.celery_app import app
from workers.failures import describe_failure

if TYPE_CHECKING:
    from trainer.evaluation.config import BenchmarkConfig
    from trainer.rewards.evaluation import RubricSource
    from trainer.samples import Sample
    from trainer.verifiers.base import Verifier
    from webapp.rewards.models import RewardJob

logger = logging.getLogger(__name__)
PROGRESS_EVERY_S = 1.0


class _Cancelled(Exception):
    pass


class _Progress:
    """Writes (phase, done, total) at most once a second; raises ``_Cancelled`` once a cancel was asked for."""

    def __init__(self, job_id: int) -> None:
        self.job_id, self.last, self.cancelled = job_id, 0.0, False
        self.state: dict[str, Any] = {"phase": "starting", "done": 0, "total": 0}

    def __call__(self, phase: str, done: int, total: int, *, force: bool = False) -> None:
        from webapp.rewards.evaluation_services import evaluation_progress

        self.state = {**self.state, "phase": phase, "done": done, "total": total}
        now = time.monotonic()
        if force or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.cancelled = evaluation_progress(job_id=self.job_id, progress=dict(self.state))
        if self.cancelled:
            raise _Cancelled()


@app.task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    name="workers.tasks_reward_eval.run_reward_evaluation",
)
def run_reward_evaluation(self: Task[Any, Any], job_id: int) -> str:
    """Evaluate job ``job_id`` to its end: 'succeeded', 'cancelled', 'failed' or 'skipped' (gone or finished)."""
    from trainer.verifiers.secrets import forget_secrets
    from webapp.rewards import evaluation_services as services

    job = services.evaluation_mark_started(job_id=job_id)
    if job is None:
        return "skipped"
    result: dict[str, Any] = {"sources": [], "timings": {}}
    try:
        _evaluate(job, result, _Progress(job_id))
    except _Cancelled:
        services.evaluation_finish(job_id=job_id, status="cancelled", result={**result, "cancelled": True})
        return "cancelled"
    except Exception as err:
        message, _trace = describe_failure(err, f"reward evaluation {job_id}")
        services.evaluation_fail(job_id=job_id, message=message)
        return "failed"
    finally:
        forget_secrets()
    services.evaluation_finish(job_id=job_id, status="succeeded", result=result)
    return "succeeded"


def _evaluate(job: RewardJob, result: dict[str, Any], progress: _Progress) -> None:
    """Fill ``result`` part by part (a cancel keeps the parts already done)."""
    from trainer.verifiers.secrets import provide_secrets
    from webapp.rewards.evaluation_services import evaluation_inputs_for_worker
    from webapp.rewards.selectors import secret_values_for_worker

    inputs = evaluation_inputs_for_worker(job=job)
    # The API keys its judges name, decrypted for this process only (forgotten when the task ends).
    provide_secrets(secret_values_for_worker(project=job.project, names=inputs["secret_names"]))
    sources = [_build_source(e, inputs["seed"]) for e in inputs["sources"]]  # None: a step scorer
    rows = result["sources"]
    for stored in job.config["sources"]:  # as stored: references, never server paths
        kind = {"kind": stored["kind"]} if stored.get("kind") else {}  # "process": a step scorer
        rows.append({"label": stored["label"], "name": stored["name"], "origin": stored.get("origin", {}),
                     "scoring_s": 0.0, "scored": 0, **kind})  # fmt: skip
    scorer = _Scorer(sources, rows, inputs["score_batch_size"], progress)
    started = time.perf_counter()
    if inputs.get("pairwise"):
        _pairwise(job, inputs, scorer, result)
    thresholds: dict[int, float] = {}
    orm_scores: dict[
        int, list[float]
    ] = {}  # each scalar source's Best-of-N scores (the process part reuses them)
    bon = None
    if inputs.get("best_of_n"):
        bon = _bon_samples(job, inputs, progress)
        thresholds = _best_of_n(job, inputs, scorer, result, bon, orm_scores)
    if inputs.get("audit"):
        _audit(inputs, scorer, result, thresholds)
    if inputs.get("agreement"):
        _agreement(job, inputs, scorer, result)
    if inputs.get("process"):
        from workers.tasks_process_eval import process_part

        process_part(inputs, rows, result, progress, bon, orm_scores)
    result["timings"]["total_s"] = time.perf_counter() - started
    for row in rows:
        row["latency_s_per_completion"] = row["scoring_s"] / row["scored"] if row["scored"] else None


def _build_source(entry: dict[str, Any], seed: int) -> Verifier | None:
    """A verifier for a config ``verifiers`` entry; a ``RubricSource`` (its judge model loaded) for a rubric's; None
    for a step scorer (the process part builds it)."""
    from trainer.rewards.evaluation import RUBRIC_SOURCE, RubricSource
    from trainer.rewards.evaluation_process import PROCESS_KIND
    from trainer.verifiers import build_verifier

    if entry.get("kind") == PROCESS_KIND:
        return None
    if entry["name"] != RUBRIC_SOURCE:
        return build_verifier(entry["name"], entry["params"])
    from trainer.rubrics.config import RubricConfig

    config = RubricConfig.model_validate(entry["params"])
    judge = None
    if config.uses_judge:
        import torch

        from trainer.rubrics.judge import load_judge

        judge = load_judge(config.judge_model, "float32", torch.device("cpu"), seed)
    return RubricSource(config, judge)


class _Scorer:
    """Scores completions with each source in batches, timing them and reporting progress. ``groups`` (one id per
    completion) are the completions a group-relative rubric compares; other sources ignore them."""

    def __init__(
        self, sources: list[Verifier | None], rows: list[dict[str, Any]], batch: int, progress: _Progress
    ) -> None:
        self.sources, self.rows, self.batch, self.progress = sources, rows, batch, progress

    def scalar_rows(self) -> list[tuple[int, dict[str, Any]]]:
        """(index, row) of the sources that score whole responses (not the step scorers)."""
        return [(i, row) for i, row in enumerate(self.rows) if self.sources[i] is not None]

    def rubric(self, index: int) -> RubricSource | None:
        from trainer.rewards.evaluation import RubricSource

        source = self.sources[index]
        return source if isinstance(source, RubricSource) else None

    def is_rubric(self, index: int) -> bool:
        return self.rubric(index) is not None

    def group_relative(self, index: int) -> bool:
        rubric = self.rubric(index)
        return rubric is not None and rubric.group_relative

    def __call__(
        self,
        index: int,
        completions: Sequence[str],
        samples: Sequence[Sample],
        phase: str,
        groups: Sequence[int] | None = None,
    ) -> list[float]:
        from trainer.rewards.evaluation import score_of

        source, rubric = self.sources[index], self.rubric(index)
        assert source is not None, "a step scorer is scored by the process part"
        scores: list[Any] = []  # floats, or a rubric's criterion rows (aggregated below)
        for start in range(0, len(completions), self.batch):
            t0 = time.perf_counter()
            chunk, owners = completions[start : start + self.batch], samples[start : start + self.batch]
            if rubric is not None:
                scores.extend(rubric.criterion_scores(chunk, owners))
            else:
                scores.extend(score_of(r) for r in source(chunk, owners))
            self.rows[index]["scoring_s"] += time.perf_counter() - t0
            self.rows[index]["scored"] += len(chunk)
            label = self.rows[index]["label"]
            self.progress(f"{phase}: {label}", len(scores), len(completions))
        if rubric is not None:
            return rubric.aggregate(scores, groups if groups is not None else range(len(scores)))
        return scores


def _pairwise(job: RewardJob, inputs: dict[str, Any], scorer: _Scorer, result: dict[str, Any]) -> None:
    from trainer.rewards.evaluation import pairwise_accuracy
    from trainer.samples import Sample
    from webapp.rewards.evaluation_selectors import pairs_for_evaluation

    pairs = pairs_for_evaluation(project=job.project, spec=inputs["pairwise"])
    samples = [Sample(id=f"pair-{i}", prompt=p["prompt"], answer=p["answer"]) for i, p in enumerate(pairs)]
    result["pairwise"] = {"pairs": len(pairs), "from": job.config["pairwise"]}
    for i, row in scorer.scalar_rows():
        if scorer.group_relative(i):  # a rank rubric compares the two responses of each pair
            both = [p["chosen"] for p in pairs] + [p["rejected"] for p in pairs]
            scores = scorer(i, both, samples + samples, "pairwise", groups=[*range(len(pairs))] * 2)
            chosen, rejected = scores[: len(pairs)], scores[len(pairs) :]
        else:
            chosen = scorer(i, [p["chosen"] for p in pairs], samples, "pairwise (chosen)")
            rejected = scorer(i, [p["rejected"] for p in pairs], samples, "pairwise (rejected)")
        row["pairwise"] = pairwise_accuracy(
            chosen, rejected, seed=inputs["seed"], resamples=inputs["bootstrap_resamples"]
        ).to_json()


def _bon_samples(
    job: RewardJob, inputs: dict[str, Any], progress: _Progress
) -> tuple[list[Any], list[Sample], BenchmarkConfig]:
    """(problems [{id, texts, correct, answers, token_ids}], their Samples, the benchmark config): generated once,
    then read from the job's cache."""
    from django.conf import settings

    from trainer.evaluation.engine import evaluate, load_benchmark_samples
    from trainer.evaluation.suite import resolve_benchmark

    bon = inputs["best_of_n"]
    overrides: dict[str, Any] = {"n_samples": bon["n"], "greedy": False, "temperature": bon["temperature"],
                                 "max_problems": bon["problems"], "seed": inputs["seed"], "bootstrap_samples": 0}  # fmt: skip
    if bon.get("max_tokens"):
        overrides["max_tokens"] = bon["max_tokens"]
    config = resolve_benchmark(inputs.get("benchmark_config") or bon["benchmark"], **overrides)
    samples = load_benchmark_samples(config)
    # Keyed by what was sampled and when the job was made: job ids restart with a new database, a key does not.
    key = json.dumps([config.model_dump(mode="json"), bon["policy"], str(job.created_at)], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    cache = Path(settings.DATA_DIR) / "reward-evaluations" / f"job-{job.pk}" / f"samples-{digest}.json"
    if cache.is_file():
        return json.loads(cache.read_text(encoding="utf-8")), samples, config

    class Sink:
        done = 0

        def on_start(self, total_problems: int, done: int) -> None:
            progress("sampling", done, total_problems, force=True)

        def on_problem(self, problem: Any) -> None:
            self.done += 1
            progress("sampling", self.done, len(samples))

        def on_end(self, result: Any) -> None:
            pass

    evaluated = evaluate(config, bon["policy"], sink=Sink(), should_stop=lambda: progress.cancelled)
    if evaluated.status == "cancelled":
        raise _Cancelled()
    problems = [
        {"id": p.problem_id, "texts": [s.text for s in p.samples], "correct": [bool(s.correct) for s in p.samples],
         "answers": [s.extracted_answer for s in p.samples], "token_ids": [list(s.token_ids) for s in p.samples]}
        for p in evaluated.problems
    ]  # fmt: skip
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(problems), encoding="utf-8")
    return problems, samples, config


def _best_of_n(
    job: RewardJob, inputs: dict[str, Any], scorer: _Scorer, result: dict[str, Any],
    bon: tuple[list[Any], list[Sample], BenchmarkConfig], scores_out: dict[int, list[float]],
) -> dict[int, float]:  # fmt: skip
    """Each scalar source's curve (its scores kept in ``scores_out``); returns, per source index, the median score it
    gave the oracle's correct samples (the audit's threshold for a reward model that has no verdict of its own)."""
    from trainer.rewards.evaluation import BestOfNSpec, ScoredSample, best_of_n_baselines, best_of_n_curve

    t0 = time.perf_counter()
    problems, samples, _config = bon
    by_id = {s.id: s for s in samples}
    texts = [t for p in problems for t in p["texts"]]
    owners = [by_id[p["id"]] for p in problems for _ in p["texts"]]
    problem_of = [k for k, p in enumerate(problems) for _ in p["texts"]]  # a rank rubric's groups
    ns = BestOfNSpec.model_validate(inputs["best_of_n"]).ns

    def groups(scores: list[float]) -> list[list[ScoredSample]]:
        it = iter(scores)
        return [
            [ScoredSample(a, c, next(it)) for a, c in zip(p["answers"], p["correct"], strict=True)]
            for p in problems
        ]

    seed = inputs["seed"]
    base = best_of_n_baselines(groups([0.0] * len(texts)), ns, seed=seed)
    stored = job.config["best_of_n"]
    result["best_of_n"] = {**{k: stored[k] for k in ("benchmark", "policy", "n", "problems")}, "ns": ns,
                           "baselines": base, "sampling_s": time.perf_counter() - t0}  # fmt: skip
    thresholds: dict[int, float] = {}
    for i, row in scorer.scalar_rows():
        scores = scorer(i, texts, owners, "best-of-n", groups=problem_of)
        scores_out[i] = scores
        curve = best_of_n_curve(groups(scores), ns, seed=seed, resamples=min(inputs["bootstrap_resamples"], 1000),
                                baselines=base)  # fmt: skip
        row["best_of_n"] = curve.to_json()
        correct_scores = [s for s, c in zip(scores, (c for p in problems for c in p["correct"]), strict=True)
                          if c and math.isfinite(s)]  # fmt: skip
        if correct_scores:
            thresholds[i] = statistics.median(correct_scores)
    return thresholds


def _audit(
    inputs: dict[str, Any], scorer: _Scorer, result: dict[str, Any], thresholds: dict[int, float]
) -> None:
    from trainer.evaluation.engine import load_benchmark_samples
    from trainer.evaluation.suite import resolve_benchmark
    from trainer.rewards.evaluation import audit_judge

    benchmark = (inputs.get("best_of_n") or {}).get("benchmark", "builtin:chain_arithmetic")
    spec = inputs.get("benchmark_config") or benchmark
    problems = load_benchmark_samples(resolve_benchmark(spec, max_problems=inputs["audit_problems"]))
    result["audit"] = {"benchmark": benchmark, "problems": len(problems)}
    for i, (row, entry) in enumerate(zip(scorer.rows, inputs["sources"], strict=True)):
        threshold, source = None, scorer.sources[i]
        if source is None:  # a step scorer
            continue
        if scorer.group_relative(i):
            row["audit"] = {"fpr": None, "note": "A rubric aggregated by rank scores each response against the others "
                            "of its group: it has no absolute score that accepts or rejects one response."}  # fmt: skip
            continue
        if scorer.is_rubric(i) or (
            entry["name"] == "reward_model" and entry["params"].get("correct_above") is None
        ):
            if i not in thresholds:
                row["audit"] = {"fpr": None, "note": "A reward model without correct_above, or a rubric, needs a "
                                "Best-of-N part: its threshold is the median score it gives the oracle's correct "
                                "samples."}  # fmt: skip
                continue
            threshold = thresholds[i]

        def tick(done: int, total: int, label: str = row["label"]) -> None:
            scorer.progress(f"audit: {label}", done, total)

        t0 = time.perf_counter()
        audit = audit_judge(source, problems, threshold=threshold, batch_size=scorer.batch, on_batch=tick)
        row["scoring_s"] += time.perf_counter() - t0
        row["scored"] += sum(r.responses for r in audit.rows)
        row["audit"] = audit.to_json()


def _agreement(job: RewardJob, inputs: dict[str, Any], scorer: _Scorer, result: dict[str, Any]) -> None:
    from trainer.samples import Sample
    from webapp.annotation.agreement import scorer_vs_people
    from webapp.rewards.evaluation_selectors import agreement_items

    task = agreement_items(project=job.project, task_id=inputs["agreement"]["annotation_task"])
    items = task["items"]
    result["agreement"] = {
        "task": task["task"],
        "name": task["name"],
        "kind": task["kind"],
        "items": len(items),
    }
    samples = [Sample(id=f"item-{it['id']}", prompt=it["prompt"], answer=it["answer"]) for it in items]
    prompts: dict[str, int] = {}
    same_prompt = [prompts.setdefault(it["prompt"], len(prompts)) for it in items]  # a rank rubric's groups
    for i, row in scorer.scalar_rows():
        if task["kind"] == "pairwise":
            if scorer.group_relative(i):  # a rank rubric compares the two responses of each item
                both = [it["left"] for it in items] + [it["right"] for it in items]
                scores = scorer(i, both, samples + samples, "agreement", groups=[*range(len(items))] * 2)
                left, right = scores[: len(items)], scores[len(items) :]
            else:
                left = scorer(i, [it["left"] for it in items], samples, "agreement (left)")
                right = scorer(i, [it["right"] for it in items], samples, "agreement (right)")
            row["agreement"] = _pairwise_agreement(left, right, [it["decision"] for it in items])
            continue
        scores = scorer(i, [it["completion"] for it in items], samples, "agreement", groups=same_prompt)
        machine = _unit_scale({it["id"]: s for it, s in zip(items, scores, strict=True) if math.isfinite(s)})
        people = {it["id"]: it["people"] for it in items}
        row["agreement"] = {
            **scorer_vs_people(machine, people).as_dict(),
            "absent": len(items) - len(machine),
        }


def _pairwise_agreement(left: list[float], right: list[float], decisions: list[str]) -> dict[str, Any]:
    """The share of people's final left/right choices the source agrees with (its tie counts half)."""
    agree: list[float] = []
    for lv, rv, decision in zip(left, right, decisions, strict=True):
        if not (math.isfinite(lv) and math.isfinite(rv)):
            continue
        prefers = "tie" if lv == rv else "left" if lv > rv else "right"
        agree.append(0.5 if prefers == "tie" else float(prefers == decision))
    return {
        "share": sum(agree) / len(agree) if agree else None,
        "items": len(agree),
        "absent": len(left) - len(agree),
    }


def _unit_scale(values: dict[int, float]) -> dict[int, float]:
    """Min-max to 0-1 (the people's mean is on 0-1), so Krippendorff's alpha compares like with like."""
    if not values:
        return values
    low, high = min(values.values()), max(values.values())
    return {k: (v - low) / (high - low) if high > low else 0.5 for k, v in values.items()}
