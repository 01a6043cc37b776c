"""Evaluating a process reward model (any step scorer) against step truth: pure statistics, plus the scoring loop.

- ``first_error_evaluation``: ProcessBench's first-error task (Zheng et al. 2024, "ProcessBench: Identifying Process
  Errors in Mathematical Reasoning"). A solution's predicted first wrong step is the first step scored below
  ``threshold`` (an absent, ``nan``, score is never read as wrong), or none; the reference is the oracle's first
  wrong step (the chain_arithmetic verifier on the chain task, ``scorers.chain_first_wrong``) or the first step
  labelled wrong in an uploaded step-labelled file (trainer/process/step_labels.py). The accuracy on erroneous
  solutions (the same step named), on correct ones (no step named) and ProcessBench's F1, their harmonic mean
  (with only one kind of solution present, that kind's accuracy: ``scorers.first_error_f1``, the same number the
  training metric ``process/oracle_f1`` reports). The 95% interval is a percentile bootstrap that resamples the
  erroneous and the correct solutions separately (so every resample has both kinds, as the point estimate does).
- ``step_calibration``: reliability bins of the predicted step score against the step's empirical correctness
  (equal-width bins over [0, 1], the last one closed) and the expected calibration error (Naeini et al. 2015:
  the bins' |accuracy - mean score| weighted by their share of steps). Steps with an absent score or label are
  left out and counted. The chain oracle's step labels (``oracle_step_labels``) are 1 before the first wrong step
  and 0 from it on (``after_error='wrong'``, as the ``oracle_chain`` scorer scores them) or only up to it
  (``after_error='skip'``, ProcessBench's reading: what follows an error is not judged).
- ``prm_best_of_n``: a solution's score is an aggregate of its step scores over the present ones (``min``, as
  PRM Best-of-N usually ranks, after "Let's Verify Step by Step"; ``last``: the final step's score; ``product``;
  ``mean``; all absent: absent), and the Best-of-N curve is trainer/rewards/evaluation.py's ``best_of_n_curve`` with
  its baselines (majority vote, pass@N, random) reused as they are; an ORM's curve is computed the same way from
  its completion scores (``orm_best_of_n``) so the two are read side by side.
- ``score_problems``: segments and scores the N samples of each problem with a registered step scorer, in batches
  of problems, with ``progress(done, total)`` and ``should_stop()`` callbacks (a worker job calls it as
  ``bradley_terry.train_reward_model`` is called); ``step_example_inputs`` turns uploaded step-labelled examples
  into the scorer's inputs.

``python -m trainer.process.evaluation`` samples the chain task with a policy, scores the steps and prints the
first-error F1, the ECE and the PRM-vs-ORM Best-of-N table. Torch-free at import (numpy, the registries).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from trainer.process.base import ScorerContext
from trainer.process.records import with_builtin_model
from trainer.process.scorers import STEP_SCORERS, chain_first_wrong, first_error_f1
from trainer.process.steps import StepSpans, segment, token_texts
from trainer.rewards.evaluation import (
    DEFAULT_NS,
    BestOfNCurve,
    ScoredSample,
    best_of_n_baselines,
    best_of_n_curve,
)
from trainer.samples import Sample

if TYPE_CHECKING:
    from trainer.evaluation.engine import ProblemResult
    from trainer.process.step_labels import StepExample

CONFIDENCE = 0.95
DEFAULT_THRESHOLD = 0.5
Aggregate = Literal["min", "last", "product", "mean"]
AGGREGATES: tuple[str, ...] = ("min", "last", "product", "mean")
MC_BEST_OF_N_NOTE = (
    "the monte_carlo scorer's last step is the completion's own verdict (the oracle's), so its Best-of-N curve "
    "reads the oracle: 'min' can never pick a wrong completion over a right one that has any Monte-Carlo value "
    "above 0, and 'last' is the oracle itself (--without-last-step leaves it out)"
)
F1_DEFINITION = (
    "ProcessBench (Zheng et al. 2024): the harmonic mean of the accuracy on erroneous solutions (the first wrong "
    "step named exactly) and on correct ones (no step named)"
)


def _absent(value: float | None) -> bool:
    return value is None or not math.isfinite(value)


# ---------------------------------------------------------------------------------------------------- first error


def predicted_first_wrong(scores: Sequence[float], threshold: float = DEFAULT_THRESHOLD) -> int | None:
    """The first step scored below ``threshold``; an absent (nan) score is never wrong. None: no step named.

    >>> predicted_first_wrong([0.9, float("nan"), 0.2, 0.0])
    2
    """
    return next((k for k, s in enumerate(scores) if not _absent(s) and s < threshold), None)


def reference_first_wrong(labels: Sequence[float], threshold: float = DEFAULT_THRESHOLD) -> int | None:
    """The first step labelled wrong (label < ``threshold``; an unlabelled, nan, step is not) in an uploaded file."""
    return predicted_first_wrong(labels, threshold)


@dataclass(frozen=True)
class FirstErrorReport:
    f1: float | None  # None without solutions
    f1_ci: tuple[float, float] | None
    accuracy_erroneous: float | None  # None without erroneous solutions
    accuracy_correct: float | None  # None without correct solutions
    erroneous: int  # solutions the reference says have a wrong step
    correct: int
    threshold: float
    early: int = 0  # erroneous solutions blamed before the reference step (or correct ones blamed at all)
    late: int = 0  # erroneous solutions blamed after the reference step, or never
    definition: str = F1_DEFINITION

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["f1_ci"] = list(self.f1_ci) if self.f1_ci is not None else None
        return out


def _f1_of(hits_wrong: np.ndarray, hits_right: np.ndarray) -> np.ndarray:
    """The point estimate's rule on arrays (first_error_f1's), vectorised over resamples: [B, n] -> [B]."""
    if hits_wrong.shape[1] == 0:
        return hits_right.mean(axis=1)
    if hits_right.shape[1] == 0:
        return hits_wrong.mean(axis=1)
    a, b = hits_wrong.mean(axis=1), hits_right.mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(a + b > 0, 2 * a * b / np.maximum(a + b, 1e-300), 0.0)


def first_error_evaluation(
    step_scores: Sequence[Sequence[float]],
    references: Sequence[int | None],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    seed: int = 0,
    resamples: int = 2000,
) -> FirstErrorReport:
    """ProcessBench's first-error accuracies and F1 with a stratified bootstrap 95% interval (module docstring).

    ``references[i]``: solution i's reference first wrong step, None for a correct solution (leave out solutions
    without a reference before calling).

    >>> r = first_error_evaluation([[1, 0], [1, 1], [1, 1], [0, 1]], [1, 0, None, None], resamples=0)
    >>> (r.accuracy_erroneous, r.accuracy_correct, r.f1)
    (0.5, 0.5, 0.5)
    """
    if len(step_scores) != len(references):
        raise ValueError(f"{len(step_scores)} score rows but {len(references)} references")
    predicted = [predicted_first_wrong(row, threshold) for row in step_scores]
    pairs = list(zip(predicted, references, strict=True))
    wrong = np.array([p == o for p, o in pairs if o is not None], dtype=np.float64)
    right = np.array([p is None for p, o in pairs if o is None], dtype=np.float64)
    early = sum(1 for p, o in pairs if p is not None and (o is None or p < o))
    late = sum(1 for p, o in pairs if o is not None and (p is None or p > o))
    f1 = first_error_f1(pairs)
    ci: tuple[float, float] | None = None
    if f1 is not None:
        ci = (f1, f1)
        if resamples > 0:
            rng = np.random.default_rng(seed)
            draw_w = (
                wrong[rng.integers(0, len(wrong), size=(resamples, len(wrong)))]
                if len(wrong)
                else (np.zeros((resamples, 0)))
            )
            draw_r = (
                right[rng.integers(0, len(right), size=(resamples, len(right)))]
                if len(right)
                else (np.zeros((resamples, 0)))
            )
            values = np.asarray(_f1_of(draw_w, draw_r))
            tail = (1 - CONFIDENCE) / 2 * 100
            ci = (float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail)))
    return FirstErrorReport(
        f1=f1,
        f1_ci=ci,
        accuracy_erroneous=float(wrong.mean()) if len(wrong) else None,
        accuracy_correct=float(right.mean()) if len(right) else None,
        erroneous=len(wrong),
        correct=len(right),
        threshold=threshold,
        early=early,
        late=late,
    )


# ---------------------------------------------------------------------------------------------------- calibration


def oracle_step_labels(
    first_wrong: int | None, n_steps: int, after_error: Literal["wrong", "skip"] = "wrong"
) -> list[float]:
    """Step labels from a reference first wrong step: 1 before it, 0 at it, and after it 0 (``wrong``) or nan
    (``skip``: not judged)."""
    if first_wrong is None:
        return [1.0] * n_steps
    after = 0.0 if after_error == "wrong" else math.nan
    return [1.0 if k < first_wrong else 0.0 if k == first_wrong else after for k in range(n_steps)]


@dataclass(frozen=True)
class ReliabilityBin:
    low: float
    high: float
    steps: int
    mean_score: float | None  # None for an empty bin
    accuracy: float | None  # the share of its steps labelled right


@dataclass(frozen=True)
class CalibrationReport:
    ece: float | None  # None without a scored, labelled step
    bins: list[ReliabilityBin]
    steps: int  # steps with both a score and a label
    absent: int  # steps left out (absent score or label)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def step_calibration(
    step_scores: Sequence[Sequence[float]], step_labels: Sequence[Sequence[float]], *, bins: int = 10
) -> CalibrationReport:
    """Reliability bins and the expected calibration error of step scores (in [0, 1]) against step labels (a label
    >= 0.5 is a right step; nan: unlabelled). Rows are parallel; a step absent in either is left out.

    >>> step_calibration([[0.9, 0.1]], [[1.0, 1.0]], bins=2).ece
    0.5
    """
    if not 1 <= bins <= 1000:
        raise ValueError(f"bins must be between 1 and 1000, got {bins}")
    if len(step_scores) != len(step_labels):
        raise ValueError(f"{len(step_scores)} score rows but {len(step_labels)} label rows")
    scores, labels, absent = [], [], 0
    for row, lab in zip(step_scores, step_labels, strict=True):
        if len(row) != len(lab):
            raise ValueError(f"a solution has {len(row)} step scores but {len(lab)} step labels")
        for s, y in zip(row, lab, strict=True):
            if _absent(s) or _absent(y):
                absent += 1
                continue
            scores.append(min(max(float(s), 0.0), 1.0))
            labels.append(1.0 if y >= 0.5 else 0.0)
    x, y_arr = np.array(scores), np.array(labels)
    index = np.minimum((x * bins).astype(np.int64), bins - 1)  # [S]; a score of exactly 1.0 in the last bin
    out, ece = [], 0.0
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        mean_score = float(x[members].mean()) if count else None
        accuracy = float(y_arr[members].mean()) if count else None
        if count:
            ece += count / len(x) * abs(accuracy - mean_score)  # type: ignore[operator]
        out.append(ReliabilityBin(b / bins, (b + 1) / bins, count, mean_score, accuracy))
    return CalibrationReport(float(ece) if len(x) else None, out, len(x), absent)


# ---------------------------------------------------------------------------------------------------- Best-of-N


def solution_score(step_scores: Sequence[float], aggregate: str = "min") -> float:
    """One score per solution from its step scores (module docstring); nan when no step is scored.

    >>> solution_score([0.9, float("nan"), 0.5], "min"), solution_score([0.9, 0.5], "product")
    (0.5, 0.45)
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}")
    if aggregate == "last":
        return float(step_scores[-1]) if step_scores and not _absent(step_scores[-1]) else math.nan
    present = [float(s) for s in step_scores if not _absent(s)]
    if not present:
        return math.nan
    if aggregate == "min":
        return min(present)
    if aggregate == "product":
        return float(np.prod(present))
    return sum(present) / len(present)


@dataclass(frozen=True)
class StepScoredSample:
    """One Best-of-N sample with its step scores: its normalised answer, the oracle's verdict, the step scores."""

    answer: str | None
    correct: bool
    step_scores: list[float]


def prm_best_of_n(
    groups: Sequence[Sequence[StepScoredSample]],
    aggregate: str = "min",
    ns: Sequence[int] = DEFAULT_NS,
    *,
    seed: int = 0,
    resamples: int = 1000,
    baselines: dict[str, list[float]] | None = None,
) -> BestOfNCurve:
    """The PRM's Best-of-N curve (trainer/rewards/evaluation.py's ``best_of_n_curve``, its majority-vote, pass@N
    and random baselines included) with each solution scored by ``aggregate`` over its steps."""
    scored = [
        [ScoredSample(s.answer, s.correct, solution_score(s.step_scores, aggregate)) for s in g]
        for g in groups
    ]
    curve = best_of_n_curve(scored, ns, seed=seed, resamples=resamples, baselines=baselines)
    curve.extra["aggregate"] = aggregate
    return curve


def orm_best_of_n(
    groups: Sequence[Sequence[StepScoredSample]],
    completion_scores: Sequence[Sequence[float]],
    ns: Sequence[int] = DEFAULT_NS,
    *,
    seed: int = 0,
    resamples: int = 1000,
    baselines: dict[str, list[float]] | None = None,
) -> BestOfNCurve:
    """An outcome reward model's curve on the same samples (``completion_scores`` parallel to ``groups``)."""
    scored = [
        [ScoredSample(s.answer, s.correct, float(v)) for s, v in zip(g, row, strict=True)]
        for g, row in zip(groups, completion_scores, strict=True)
    ]
    return best_of_n_curve(scored, ns, seed=seed, resamples=resamples, baselines=baselines)


def baselines_of(
    groups: Sequence[Sequence[StepScoredSample]], ns: Sequence[int], *, seed: int = 0
) -> dict[str, list[float]]:
    """``best_of_n_baselines`` for step-scored groups (computed once, shared by the PRM and ORM curves)."""
    return best_of_n_baselines(
        [[ScoredSample(s.answer, s.correct, math.nan) for s in g] for g in groups], sorted(set(ns)), seed=seed
    )


# ---------------------------------------------------------------------------------------------------- scoring


@dataclass
class ScoredSteps:
    """The steps of every sample (problem-major, as ``score_problems`` was given them) and their scores."""

    spans: StepSpans
    scores: list[list[float]]
    references: list[int | None]  # the oracle's first wrong step (None: right, or unknown when not known[i])
    known: list[bool]  # the sample has a reference (a chain scratchpad)
    metrics: dict[str, float] = field(default_factory=dict)  # summed over batches (process/mc_tokens ...)
    status: str = "succeeded"  # 'cancelled' when should_stop ended it (the finished problems only)


def score_problems(
    problems: Sequence[ProblemResult],
    samples: Sequence[Sample],
    *,
    scorer: str,
    scorer_params: Any,
    tokenizer: Any,
    segmenter: Any = None,
    chain_params: Any = None,
    engine: Any = None,
    sampling: Any = None,
    generator: Any = None,
    verifier: Any = None,
    problems_per_batch: int = 16,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> ScoredSteps:
    """Segment and score each problem's samples (``problems[j]`` of ``samples[j]``, ``SampleResult.token_ids``)
    with the registered step scorer, ``problems_per_batch`` problems per scorer call; the chain oracle's first
    wrong step of each sample is kept as its reference when ``chain_params`` is given. ``progress(done, total)``
    after each batch; ``should_stop()`` polled before each (then ``status`` is 'cancelled')."""
    from types import SimpleNamespace

    entry = STEP_SCORERS.get(scorer)
    params = with_builtin_model(
        scorer_params
        if isinstance(scorer_params, entry.Params)
        else entry.Params.model_validate(scorer_params or {})
    )
    segmenter = segmenter or SimpleNamespace(name="lines", params={})
    out = ScoredSteps([], [], [], [])
    total = len(problems)
    for start in range(0, total, problems_per_batch):
        if should_stop():
            out.status = "cancelled"
            break
        chunk = list(range(start, min(start + problems_per_batch, total)))
        rows = [(problems[j], samples[j], s) for j in chunk for s in problems[j].samples]
        token_ids = [list(s.token_ids) for _, _, s in rows]
        texts = [s.text for _, _, s in rows]
        owners = [sample for _, sample, _ in rows]
        spans = segment(token_ids, tokenizer, texts, None, segmenter)
        context = ScorerContext(
            params=params,
            tokenizer=tokenizer,
            prompts=[p.prompt for p, _, _ in rows],
            engine=engine,
            sampling=sampling,
            generator=generator,
            verifier=verifier,
            correct=[bool(s.correct) for _, _, s in rows],
            chain_params=chain_params,
        )
        batch = entry.score(texts, owners, spans, token_ids, context)
        out.spans.extend(spans)
        out.scores.extend([[float(v) for v in row] for row in batch.scores])
        for key, value in batch.metrics.items():
            out.metrics[key] = out.metrics.get(key, 0.0) + float(value)
        if chain_params is not None:
            for tt, row, owner in zip(token_texts(token_ids, tokenizer), spans, owners, strict=True):
                wrong, known, _ = chain_first_wrong(tt, row, owner, chain_params)
                out.references.append(wrong)
                out.known.append(known)
        else:
            out.references.extend([None] * len(rows))
            out.known.extend([False] * len(rows))
        if progress is not None:
            progress(chunk[-1] + 1, total)
    return out


def step_example_inputs(
    examples: Sequence[StepExample], tokenizer: Any, separator: str = "\n"
) -> tuple[list[str], list[list[int]], StepSpans, list[Sample], list[int | None]]:
    """An uploaded step-labelled file's examples as a scorer's inputs: (completion texts, token ids, spans, samples,
    reference first wrong steps). Each step is its own span: the step's text and ``separator`` tokenized alone, so
    the spans are the file's steps exactly, whatever the segmenter would have cut."""
    texts, ids, spans, samples, refs = [], [], [], [], []
    for i, ex in enumerate(examples):
        row_ids: list[int] = []
        row_spans: list[tuple[int, int]] = []
        for step in ex.steps:
            piece = list(tokenizer(step + separator, add_special_tokens=False)["input_ids"])
            if not piece:
                piece = list(tokenizer(separator, add_special_tokens=False)["input_ids"])
            row_spans.append((len(row_ids), len(row_ids) + len(piece)))
            row_ids.extend(piece)
        texts.append(separator.join(ex.steps) + separator)
        ids.append(row_ids)
        spans.append(row_spans)
        samples.append(Sample(f"labels-{i}", ex.prompt, None, {}))
        refs.append(reference_first_wrong(ex.labels))
    return texts, ids, spans, samples, refs


def score_step_examples(
    examples: Sequence[StepExample],
    *,
    scorer: str,
    scorer_params: Any,
    tokenizer: Any,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> tuple[list[list[float]], list[int | None]]:
    """(step scores, reference first wrong steps) of an uploaded step-labelled file's examples scored by a step
    scorer on the file's own steps (``prm``: a checkpoint; the chain oracle and Monte Carlo need a reference answer
    the files do not carry). ``batch_size`` examples per scorer call; ``progress`` and ``should_stop`` as in
    ``score_problems`` (a stopped evaluation returns the finished examples)."""
    entry = STEP_SCORERS.get(scorer)
    params = with_builtin_model(
        scorer_params
        if isinstance(scorer_params, entry.Params)
        else entry.Params.model_validate(scorer_params or {})
    )
    texts, ids, spans, samples, refs = step_example_inputs(examples, tokenizer)
    scores: list[list[float]] = []
    for start in range(0, len(examples), batch_size):
        if should_stop():
            break
        end = min(start + batch_size, len(examples))
        context = ScorerContext(
            params=params, tokenizer=tokenizer, prompts=[s.prompt for s in samples[start:end]]
        )
        batch = entry.score(texts[start:end], samples[start:end], spans[start:end], ids[start:end], context)
        scores.extend([[float(v) for v in row] for row in batch.scores])
        if progress is not None:
            progress(end, len(examples))
    return scores, refs[: len(scores)]


# ---------------------------------------------------------------------------------------------------- command line


def _print_curve(name: str, curve: BestOfNCurve) -> None:
    for i, n in enumerate(curve.ns):
        low, high = curve.best_of_n_ci[i]
        print(
            f"  {name:<14} N={n:>2}  best-of-N {curve.best_of_n[i]:.3f} [{low:.3f}, {high:.3f}]  "
            f"majority {curve.majority[i]:.3f}  random {curve.random[i]:.3f}  oracle {curve.oracle[i]:.3f}"
        )


def _labels_main(args: Any, parser: Any) -> dict[str, Any]:
    """The command line's ``--labels`` path: first-error F1 and ECE of a PRM against an uploaded file's labels."""
    import json
    from pathlib import Path

    from transformers import AutoTokenizer

    from trainer.models.tiny_model import resolve_model_path
    from trainer.process.step_labels import read_step_labels

    if args.scorer != "prm" or not args.prm:
        parser.error("--labels scores the file's steps with a checkpoint: give --scorer prm --prm FOLDER")
    params = {**json.loads(args.scorer_params), "model": args.prm}
    loaded = read_step_labels(Path(args.labels), args.labels_format, max_examples=args.max_examples)
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_path(args.prm)))
    scores, refs = score_step_examples(
        loaded.examples, scorer="prm", scorer_params=params, tokenizer=tokenizer
    )
    first = first_error_evaluation(scores, refs, threshold=args.threshold, seed=args.seed)
    calib = step_calibration(scores, [ex.labels for ex in loaded.examples], bins=args.bins)
    report = {
        "command": {k: v for k, v in vars(args).items() if k != "out"},
        "examples": len(loaded.examples),
        "skipped": loaded.skipped,
        "first_error": first.to_json(),
        "calibration": calib.to_json(),
    }
    ci = first.f1_ci or (math.nan, math.nan)
    print(f"{len(loaded.examples)} labelled examples ({loaded.skipped} rows skipped)")
    print(f"first-error F1 {first.f1} [{ci[0]:.3f}, {ci[1]:.3f}]  (ProcessBench's F1)  accuracy on erroneous "
          f"{first.accuracy_erroneous} ({first.erroneous}), on correct {first.accuracy_correct} ({first.correct})")  # fmt: skip
    print(f"step ECE {calib.ece} over {calib.steps} steps ({calib.absent} absent), {args.bins} bins")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    return report


def _main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``python -m trainer.process.evaluation --scorer monte_carlo --k 8``: sample N completions per chain problem
    with the policy (as ``python -m trainer.rewards.evaluation`` does), cut them into steps, score the steps, and
    print the first-error F1 against the chain oracle, the step ECE, and the PRM Best-of-N curve next to an ORM's
    (``--orm``: a reward_model folder) and majority vote."""
    import argparse
    import json
    import time
    from pathlib import Path

    import torch

    from trainer.evaluation.engine import evaluate, load_benchmark_samples, load_policy
    from trainer.evaluation.suite import resolve_benchmark
    from trainer.process.records import chain_params_of
    from trainer.rewards.evaluation import score_of
    from trainer.rollout import HFRolloutEngine
    from trainer.rollout.base import SamplingParams
    from trainer.verifiers import build_verifier
    from trainer.verifiers.scoring import build_verifiers

    parser = argparse.ArgumentParser(prog="python -m trainer.process.evaluation", description=_main.__doc__)
    parser.add_argument("--scorer", choices=STEP_SCORERS.names(), default="oracle_chain")
    parser.add_argument("--k", type=int, default=4, help="monte_carlo: continuations per step")
    parser.add_argument("--prm", help="prm: the checkpoint folder (or a tiny: name)")
    parser.add_argument("--scorer-params", default="{}", help="more scorer params, as JSON")
    parser.add_argument(
        "--orm", help="a reward_model folder: its Best-of-N curve is printed beside the PRM's"
    )
    parser.add_argument("--policy", default="tiny:chain")
    parser.add_argument("--benchmark", default="builtin:chain_arithmetic")
    parser.add_argument("--n", type=int, default=4, help="samples per problem")
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--aggregate", choices=AGGREGATES, default="min")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--without-last-step", action="store_true",
                        help="Best-of-N scores each solution without its last step (monte_carlo's last step is "
                        "the oracle's verdict); a one-step solution is then absent, ranked last")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the figures here as JSON")
    parser.add_argument(
        "--labels", help="a step-labelled file: evaluate the scorer against its labels instead"
    )
    parser.add_argument("--labels-format", choices=("math_shepherd", "prm800k"), default="math_shepherd")
    parser.add_argument("--max-examples", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.labels:
        return _labels_main(args, parser)
    torch.manual_seed(args.seed)
    config = resolve_benchmark(args.benchmark, n_samples=args.n, greedy=False, max_problems=args.problems,
                               seed=args.seed, bootstrap_samples=0)  # fmt: skip
    policy, tokenizer = load_policy(args.policy, "cpu")
    engine = HFRolloutEngine(policy, tokenizer)
    t0 = time.perf_counter()
    problems = evaluate(config, (policy, tokenizer)).problems
    print(f"sampled {len(problems)} problems x {args.n} in {time.perf_counter() - t0:.1f}s")
    by_id = {s.id: s for s in load_benchmark_samples(config)}
    owners = [by_id[p.problem_id] for p in problems]
    verifiers = build_verifiers(config.verifiers)
    primary = verifiers[0][1]
    chain_params = chain_params_of(verifiers)
    params: dict[str, Any] = json.loads(args.scorer_params)
    if args.scorer == "monte_carlo":
        params.setdefault("k", args.k)
        params.setdefault("max_prefixes", 8192)
    if args.scorer == "prm":
        if not args.prm:
            parser.error("--scorer prm needs --prm FOLDER")
        params.setdefault("model", args.prm)
    sampling = SamplingParams(config.max_tokens, *config.sampling(), config.batch_size)
    generator = torch.Generator().manual_seed(args.seed + 1)
    t1 = time.perf_counter()
    scored = score_problems(
        problems, owners, scorer=args.scorer, scorer_params=params, tokenizer=tokenizer,
        chain_params=chain_params, engine=engine, sampling=sampling, generator=generator, verifier=primary,
    )  # fmt: skip
    score_s = time.perf_counter() - t1
    flat = [s for p in problems for s in p.samples]
    known = [i for i, k in enumerate(scored.known) if k]
    first = first_error_evaluation([scored.scores[i] for i in known], [scored.references[i] for i in known],
                                   threshold=args.threshold, seed=args.seed)  # fmt: skip
    labels = [oracle_step_labels(scored.references[i], len(scored.spans[i])) for i in known]
    calib = step_calibration([scored.scores[i] for i in known], labels, bins=args.bins)
    ns = [n for n in DEFAULT_NS if n <= args.n] + ([args.n] if args.n not in DEFAULT_NS else [])
    it = iter(zip(flat, scored.scores, strict=True))
    cut = -1 if args.without_last_step else None  # the Best-of-N score leaves the last step out
    groups = [[StepScoredSample(s.extracted_answer, s.correct, row[:cut]) for s, row in (next(it) for _ in p.samples)]
              for p in problems]  # fmt: skip
    base = baselines_of(groups, ns, seed=args.seed)
    prm_curve = prm_best_of_n(groups, args.aggregate, ns, seed=args.seed, baselines=base)
    rollouts = len(flat)
    tokens = scored.metrics.get("process/mc_tokens", 0.0)
    report: dict[str, Any] = {
        "command": {k: v for k, v in vars(args).items() if k != "out"},
        "first_error": first.to_json(),
        "calibration": calib.to_json(),
        "prm_best_of_n": prm_curve.to_json(),
        "score_s": score_s,
        "steps_mean": sum(len(r) for r in scored.spans) / max(rollouts, 1),
        "mc_tokens": tokens,
        "mc_tokens_per_rollout": tokens / max(rollouts, 1),
        "mc_prefixes": scored.metrics.get("process/mc_prefixes", 0.0),
    }
    print(f"scored {rollouts} rollouts ({report['steps_mean']:.2f} steps each) with {args.scorer} in {score_s:.1f}s"
          + (f"; {tokens:.0f} tokens generated, {tokens / max(rollouts, 1):.1f} per rollout" if tokens else ""))  # fmt: skip
    ci = first.f1_ci or (math.nan, math.nan)
    print(f"first-error F1 {first.f1} [{ci[0]:.3f}, {ci[1]:.3f}]  (ProcessBench's F1)  accuracy on erroneous "
          f"{first.accuracy_erroneous} ({first.erroneous}), on correct {first.accuracy_correct} ({first.correct})")  # fmt: skip
    print(f"step ECE {calib.ece} over {calib.steps} steps ({calib.absent} absent), {args.bins} bins")
    _print_curve(f"PRM ({args.aggregate})", prm_curve)
    if args.scorer == "monte_carlo" and not args.without_last_step:
        report["note"] = MC_BEST_OF_N_NOTE
        print(f"  note: {MC_BEST_OF_N_NOTE}")
    if args.orm:
        orm = build_verifier("reward_model", {"model": str(Path(args.orm))})
        texts = [s.text for s in flat]
        owners_flat = [owners[j] for j, p in enumerate(problems) for _ in p.samples]
        values = [score_of(r) for start in range(0, len(texts), 64)
                  for r in orm(texts[start : start + 64], owners_flat[start : start + 64])]  # fmt: skip
        it2 = iter(values)
        orm_curve = orm_best_of_n(groups, [[next(it2) for _ in p.samples] for p in problems], ns,
                                  seed=args.seed, baselines=base)  # fmt: skip
        report["orm_best_of_n"] = orm_curve.to_json()
        _print_curve("ORM", orm_curve)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    return report


if __name__ == "__main__":
    _main()
