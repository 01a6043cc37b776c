"""The evaluation engine: n samples per problem with the rollout engine, verified, reduced to benchmark metrics.

``evaluate(config, model)`` reads top to bottom: load the problems -> for each seed, for each batch of whole
problems not already done: generate n samples each (the same ``RolloutEngine.generate`` call training
makes) -> verify them (``score_batch``) -> one ``ProblemResult`` per problem, handed to the sink at once
(so an interrupted evaluation loses at most the batch in flight) -> metrics with bootstrap CIs.

How it differs from the usual eval scripts (lm-eval-harness, the seeds' own): each batch of problems has
its own generator seeded from ``(seed, batch index)``, so a resumed evaluation produces exactly the
samples an uninterrupted one would have (on CPU); finished problems passed in ``done`` are reused, never
regenerated. Metric definitions are in ``trainer.evaluation.metrics``; names carry their parameters
(``avg@8``, ``pass@4 (n=8)``, ``maj@8``) so tables from different n are never mixed up.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from trainer.errors import ConfigError, DataError
from trainer.evaluation.config import GREEDY_ACCURACY, BenchmarkConfig
from trainer.evaluation.metrics import avg_at_n, bootstrap_ci, maj_at_k, normalise_answer, pass_at_k
from trainer.samples import Sample

if TYPE_CHECKING:
    import torch

    from trainer.config import EvaluationConfig
    from trainer.rollout.base import RolloutBatch, RolloutEngine
    from trainer.verifiers.base import Verifier
    from trainer.verifiers.scoring import ScoreBatch


@dataclass
class SampleResult:
    """One sample of one problem, with what the per-problem drill-down shows (tokens included)."""

    index: int  # position among the problem's n samples
    text: str
    token_ids: list[int]
    tokens: list[str]
    logprobs: list[float]  # sampled tokens' logprobs (temperature applied)
    finish_reason: str  # "eos" | "length" (truncated)
    length: int  # completion tokens
    reward: float  # weighted sum over the verifiers that scored it
    correct: bool  # from the first (primary) verifier; False when it had no score (absent)
    extracted_answer: str | None  # normalised answer of the primary verifier: what maj@k votes on
    detail: dict[str, Any] = field(default_factory=dict)  # verifier key -> detail record
    rewards: dict[str, float | None] = field(default_factory=dict)  # verifier key -> raw reward; None: absent
    absent: bool = False  # the primary verifier had no score (a failed model or judge call): not correct

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleResult:
        return cls(**data)


@dataclass
class ProblemResult:
    """All samples of one problem under one seed."""

    problem_id: str
    prompt: str  # as the model saw it (template applied)
    answer: str | None
    seed: int
    samples: list[SampleResult]
    index: int = 0  # the problem's position in the benchmark

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def c(self) -> int:
        return sum(s.correct for s in self.samples)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProblemResult:
        fields = dict(data)
        fields["samples"] = [SampleResult.from_dict(s) for s in fields.get("samples", [])]
        return cls(**fields)


@dataclass
class EvalResult:
    """Metrics (names carry their parameters), their confidence intervals, per-problem results, timings.

    ``status`` is 'succeeded', or 'cancelled' when ``should_stop`` ended the evaluation early: the metrics
    then cover the finished problems only, and passing ``problems`` back as ``done`` resumes it.
    """

    metrics: dict[str, float]
    ci: dict[str, tuple[float, float]]
    problems: list[ProblemResult]
    timings: dict[str, float]
    status: str = "succeeded"
    benchmark: str = ""

    def to_dict(self, with_problems: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "status": self.status,
            "metrics": self.metrics,
            "ci": {k: list(v) for k, v in self.ci.items()},
            "timings": self.timings,
        }
        if with_problems:
            out["problems"] = [p.to_dict() for p in self.problems]
        return out


class EvalSink(Protocol):
    """Where an evaluation reports (the web side stores per-problem rows; the CLI appends JSONL)."""

    def on_start(self, total_problems: int, done: int) -> None: ...

    def on_problem(self, result: ProblemResult) -> None: ...

    def on_end(self, result: EvalResult) -> None: ...


class NullEvalSink:
    def on_start(self, total_problems: int, done: int) -> None:
        pass

    def on_problem(self, result: ProblemResult) -> None:
        pass

    def on_end(self, result: EvalResult) -> None:
        pass


ModelLike = Any  # str (tiny:..., a model dir, a run/checkpoint dir) | (model, tokenizer) | a RolloutEngine


def evaluate(
    config: BenchmarkConfig,
    model: ModelLike,
    *,
    sink: EvalSink | None = None,
    done: Iterable[ProblemResult] = (),
    should_stop: Callable[[], bool] = lambda: False,
    device: str = "auto",
    dtype: str = "float32",
    samples: Sequence[Sample] | None = None,
) -> EvalResult:
    """Evaluate ``model`` on ``config`` (see the module docstring) and return metrics and per-problem results.

    ``model``: 'tiny:addition', a model directory or a run / step-NNNNNN checkpoint (loaded on ``device`` in
    ``dtype``), a loaded ``(model, tokenizer)`` pair (used where it is), or any ``RolloutEngine`` (its
    ``tokenizer`` attribute, if any, decodes token strings). ``done``: problems finished earlier; they are
    reused, not regenerated. ``should_stop`` is polled between batches; when it turns True the result has
    status 'cancelled'. ``samples``: the problems already loaded (``load_benchmark_samples``), used as given.
    """
    from trainer.data import render_prompt
    from trainer.verifiers.scoring import build_verifiers

    sink = sink or NullEvalSink()
    t_start = time.perf_counter()
    problems = list(samples) if samples is not None else load_benchmark_samples(config)
    engine, tokenizer, gen_device = _engine_for(model, device, dtype)
    verifiers = build_verifiers(config.verifiers)
    prompts = [render_prompt(s, config.data, tokenizer) for s in problems]
    finished = _check_done(config, problems, done)
    seeds = [config.seed + i for i in range(config.num_seeds)]
    sink.on_start(len(problems) * len(seeds), len(finished))
    timings = {
        "load_s": time.perf_counter() - t_start,
        "generate_s": 0.0,
        "verify_s": 0.0,
        "generated_samples": 0.0,
    }
    status, per_batch = "succeeded", config.problems_per_batch
    for seed in seeds:
        for batch_index, start in enumerate(range(0, len(problems), per_batch)):
            todo = [
                i
                for i in range(start, min(start + per_batch, len(problems)))
                if (problems[i].id, seed) not in finished
            ]
            if not todo:
                continue
            if should_stop():
                status = "cancelled"
                break
            generator = _batch_generator(seed, batch_index, gen_device)
            results = _evaluate_batch(
                engine,
                tokenizer,
                verifiers,
                config,
                [problems[i] for i in todo],
                [prompts[i] for i in todo],
                todo,
                seed,
                generator,
                timings,
            )
            for problem_result in results:
                finished[(problem_result.problem_id, seed)] = problem_result
                sink.on_problem(problem_result)
        if status == "cancelled":
            break
    order = {s.id: i for i, s in enumerate(problems)}
    ordered = sorted(finished.values(), key=lambda p: (p.seed, order[p.problem_id]))
    metrics, ci = benchmark_metrics(config, ordered)
    timings["total_s"] = time.perf_counter() - t_start
    result = EvalResult(metrics, ci, ordered, _rates(timings), status, config.name)
    sink.on_end(result)
    return result


def load_benchmark_samples(config: BenchmarkConfig) -> list[Sample]:
    """The benchmark's problems in order; a data file is checked row by row first, so every bad row is
    reported at once (by number), not only the first."""
    from trainer.data import load_samples
    from trainer.data.row_check import check_data_file

    data = config.data
    if data.source == "file":
        assert data.path is not None  # DataConfig refuses source='file' without a path
        report = check_data_file(
            data.path,
            format=data.format,
            prompt_field=data.prompt_field,
            answer_field=data.answer_field,
            id_field=data.id_field,
        )
        if not report.ok:
            raise DataError(report.summary())
    problems = load_samples(data)
    return problems[: config.max_problems] if config.max_problems else problems


def _engine_for(model: ModelLike, device: str, dtype: str) -> tuple[RolloutEngine, Any, torch.device]:
    """(engine, tokenizer or None, device for the sampling generator) for any accepted ``model``."""
    import torch

    if not isinstance(model, str | tuple):
        engine_device = getattr(model, "device", torch.device("cpu"))
        return model, getattr(model, "tokenizer", None), engine_device  # an engine (tests, other backends)
    from trainer.rollout import HFRolloutEngine

    if isinstance(model, tuple):
        policy, tokenizer = model
    else:
        policy, tokenizer = load_policy(str(model), device, dtype)
    engine = HFRolloutEngine(policy, tokenizer)
    return engine, tokenizer, engine.device


def load_policy(name_or_path: str, device: str = "auto", dtype: str = "float32") -> tuple[Any, Any]:
    """(model, tokenizer) from 'tiny:addition', a Hugging Face model dir, or a run / step-NNNNNN checkpoint."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from trainer.models.checkpoint import resolve_checkpoint_dir
    from trainer.models.device import resolve_device, resolve_dtype
    from trainer.models.lora import is_adapter_dir, load_causal_lm
    from trainer.models.tiny_model import resolve_model_path

    path = Path(resolve_model_path(name_or_path))
    if not path.exists():
        raise ConfigError(
            f"model {name_or_path!r} does not exist: give 'tiny:addition', a local Hugging Face model "
            "directory or a run directory / step-NNNNNN checkpoint (nothing is downloaded)"
        )
    if not (path / "config.json").exists() and not is_adapter_dir(path):
        path = resolve_checkpoint_dir(path)  # a run directory: its latest complete checkpoint
    try:
        policy = load_causal_lm(path, resolve_dtype(dtype))  # full model, or a LoRA adapter on its base
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as err:
        raise ConfigError(f"could not load a causal LM from {str(path)!r}: {err}") from None
    policy.to(resolve_device(device))  # type: ignore[arg-type]  # transformers stubs type .to oddly
    return policy.eval(), tokenizer


def _check_done(
    config: BenchmarkConfig, problems: Sequence[Sample], done: Iterable[ProblemResult]
) -> dict[tuple[str, int], ProblemResult]:
    """Finished problems keyed by (id, seed); refuse results that cannot belong to this benchmark."""
    known = {s.id for s in problems}
    seeds = {config.seed + i for i in range(config.num_seeds)}
    finished: dict[tuple[str, int], ProblemResult] = {}
    for problem in done:
        if problem.seed not in seeds or problem.problem_id not in known:
            continue  # another seed or a problem cut by max_problems: not part of this evaluation
        if problem.n != config.n_samples:
            raise ConfigError(
                f"the saved result of problem {problem.problem_id!r} has {problem.n} samples but n_samples is "
                f"{config.n_samples}: resume with the same n, or start the evaluation over"
            )
        finished[(problem.problem_id, problem.seed)] = problem
    return finished


def _batch_generator(seed: int, batch_index: int, device: torch.device) -> torch.Generator:
    """A generator for one batch, seeded from (seed, batch index) alone, so a resumed run draws the same."""
    import torch

    digest = hashlib.sha256(f"rlvr-eval:{seed}:{batch_index}".encode()).digest()
    return torch.Generator(device=device).manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))


def _evaluate_batch(
    engine: RolloutEngine,
    tokenizer: Any,
    verifiers: Sequence[tuple[str, Verifier]],
    config: BenchmarkConfig,
    problems: Sequence[Sample],
    prompts: Sequence[str],
    indices: Sequence[int],
    seed: int,
    generator: torch.Generator,
    timings: dict[str, float],
) -> list[ProblemResult]:
    """Generate n samples for each problem of the batch, verify them, and group them per problem."""
    from trainer.rollout.base import SamplingParams
    from trainer.verifiers.scoring import score_batch

    n = config.n_samples
    params = SamplingParams(config.max_tokens, *config.sampling(), config.batch_size)
    t0 = time.perf_counter()
    batch = engine.generate(
        [p for p in prompts for _ in range(n)], params, generator
    )  # N = len(problems) * n
    t1 = time.perf_counter()
    scores = score_batch(
        verifiers, config.reward_weights, batch.texts, [s for s in problems for _ in range(n)]
    )
    t2 = time.perf_counter()
    timings["generate_s"] += t1 - t0
    timings["verify_s"] += t2 - t1
    timings["generated_samples"] += len(batch)
    samples = _sample_results(batch, scores, verifiers[0][0], tokenizer, n)
    return [
        ProblemResult(s.id, prompt, s.answer, seed, samples[j * n : (j + 1) * n], index)
        for j, (s, prompt, index) in enumerate(zip(problems, prompts, indices, strict=True))
    ]


def _sample_results(
    batch: RolloutBatch, scores: ScoreBatch, primary: str, tokenizer: Any, n: int
) -> list[SampleResult]:
    """One SampleResult per completion of the batch (problem-major, n per problem)."""
    lengths = [int(x) for x in batch.lengths.tolist()]
    ids = batch.completion_ids.tolist()
    logprobs = batch.logprobs.tolist()
    token_str = _token_strings(tokenizer, {t for row, m in zip(ids, lengths, strict=True) for t in row[:m]})
    results = []
    for i, m in enumerate(lengths):
        detail = scores.details[i]
        extracted = detail.get(primary, {}).get("extracted")
        results.append(
            SampleResult(
                index=i % n,
                text=batch.texts[i],
                token_ids=ids[i][:m],
                tokens=[token_str[t] for t in ids[i][:m]],
                logprobs=[float(x) for x in logprobs[i][:m]],
                finish_reason=batch.finish_reasons[i],
                length=m,
                reward=float(scores.total[i]),
                correct=bool(scores.correct[i]),
                extracted_answer=normalise_answer(extracted if isinstance(extracted, str) else None),
                detail=detail,
                rewards={
                    k: None if math.isnan(v[i]) else float(v[i]) for k, v in scores.per_verifier.items()
                },
                absent=bool(scores.absent.get(primary, [False] * len(lengths))[i]),
            )
        )
    return results


def _token_strings(tokenizer: Any, distinct: set[int]) -> dict[int, str]:
    """Each distinct token id decoded once (a token's string depends on it alone)."""
    ordered = sorted(distinct)
    if tokenizer is None:
        return {t: str(t) for t in ordered}
    decoded = tokenizer.batch_decode([[t] for t in ordered], skip_special_tokens=False) if ordered else []
    return dict(zip(ordered, decoded, strict=True))


def problem_values(config: BenchmarkConfig, problem: ProblemResult) -> dict[str, float]:
    """The per-problem value of every metric; a benchmark's metric is their mean over problems (and seeds)."""
    n = problem.n
    lengths = {"response_len_mean": float(np.mean([s.length for s in problem.samples]))}
    if config.greedy:  # one greedy completion (n = 1)
        return {GREEDY_ACCURACY: float(problem.c > 0), **lengths}
    answers = [s.extracted_answer for s in problem.samples]
    correct = [s.correct for s in problem.samples]
    values = {f"avg@{n}": avg_at_n([s.reward for s in problem.samples])}
    for k in config.pass_k:
        values[f"pass@{k} (n={n})"] = pass_at_k(n, problem.c, k)
    for k in config.maj_k:
        values[f"maj@{k}"] = maj_at_k(answers, correct, k)
    return {**values, **lengths}


def benchmark_metrics(
    config: BenchmarkConfig, problems: Sequence[ProblemResult]
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Mean of each per-problem metric, the truncated-sample count, and bootstrap CIs over problems and
    seeds (cells of a [seed, problem] table; a missing cell is NaN and ignored)."""
    if not problems:
        return {}, {}
    seeds = sorted({p.seed for p in problems})
    ids = list(dict.fromkeys(p.problem_id for p in problems))
    row, col = {s: i for i, s in enumerate(seeds)}, {pid: j for j, pid in enumerate(ids)}
    tables: dict[str, np.ndarray] = {}
    for problem in problems:
        for name, value in problem_values(config, problem).items():
            table = tables.setdefault(name, np.full((len(seeds), len(ids)), np.nan))  # [S, P]
            table[row[problem.seed], col[problem.problem_id]] = value
    metrics = {name: float(np.nanmean(table)) for name, table in tables.items()}
    metrics["truncated"] = float(sum(s.finish_reason == "length" for p in problems for s in p.samples))
    absent = sum(s.absent for p in problems for s in p.samples)
    if absent:  # samples the primary source could not score: counted as not correct above, and counted here
        metrics["absent"] = float(absent)
    ci = {
        name: bootstrap_ci(table, config.bootstrap_samples, config.confidence, seed=config.seed)
        for name, table in tables.items()
    }
    return metrics, ci


def _rates(timings: dict[str, float]) -> dict[str, float]:
    """Adds verify_frac (verification / (generation + verification)) and generated samples per second."""
    samples = timings["generated_samples"]
    busy = timings["generate_s"] + timings["verify_s"]
    return {
        **timings,
        "verify_frac": timings["verify_s"] / busy if busy > 0 else 0.0,
        "samples_per_s": samples / busy if busy > 0 else math.nan,
    }


class PeriodicEvaluation:
    """Evaluation inside ``train()``: every ``eval_every`` steps, each benchmark on the live policy; with
    ``eval_at_start`` also before the first update (the loop reports it as step 0), with ``eval_at_end`` also
    after the last step.

    Problems are loaded once; each evaluation samples with its own generators, so the training RNG stream
    (and therefore the run) is the same with or without periodic evaluation.
    """

    def __init__(self, evaluation: EvaluationConfig) -> None:
        from trainer.evaluation.suite import resolve_training_benchmarks

        self.every = evaluation.eval_every
        self.at_start, self.at_end = evaluation.eval_at_start, evaluation.eval_at_end
        self.benchmarks = resolve_training_benchmarks(evaluation) if evaluation.enabled else []
        self._samples: dict[str, list[Sample]] = {}

    def due(self, step: int, max_steps: int | None = None) -> bool:
        """Whether to evaluate after ``step``: a multiple of ``eval_every``, or the last step with ``eval_at_end``."""
        every = bool(self.every) and step % self.every == 0
        return every or (self.at_end and step == max_steps)

    def metrics(self, model: Any, tokenizer: Any) -> dict[str, float]:
        """``eval/<benchmark>/<metric>`` for every benchmark, evaluated on ``(model, tokenizer)`` as is."""
        out: dict[str, float] = {}
        for bench in self.benchmarks:
            if bench.name not in self._samples:
                self._samples[bench.name] = load_benchmark_samples(bench)
            result = evaluate(bench, (model, tokenizer), samples=self._samples[bench.name])
            for name, value in result.metrics.items():
                out[f"eval/{bench.name}/{name}"] = value
            out[f"eval/{bench.name}/eval_s"] = result.timings["total_s"]
        return out
