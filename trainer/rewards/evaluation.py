"""Evaluating a reward source (a verifier, a rubric, a reward model or a judge) as a reward: pure statistics.

- ``pairwise_accuracy``: the share of held-out preference pairs where the source scores the chosen response above
  the rejected one, as RewardBench reports it ("RewardBench: Evaluating Reward Models for Language Modeling",
  Lambert et al., 2024). A tie counts 0.5 (RewardBench counts it 0: a source that scores everything alike would
  otherwise look as good as a coin, which 0.5 says honestly). A pair where either score is absent (the source failed
  or could not parse, reward ``nan``) is counted and excluded, never scored 0. The 95% interval is a percentile
  bootstrap over the scored pairs.
- ``best_of_n_curve``: Best-of-N selection (the policy samples N responses, the source picks its top-scored one) on a
  benchmark whose oracle verifier knows the truth. For each N we report the expected accuracy of the source's pick
  over a uniformly random N-subset of the k >= N samples each problem has, next to three baselines: random choice
  (the mean accuracy), majority vote over the N extracted answers (self-consistency) and the oracle (pass@N, Chen et
  al. 2021's unbiased estimator). The source's pick is computed EXACTLY with order statistics, not by drawing
  subsets: with the k samples sorted by score, the sample at position p (0 = best) is the top of a random N-subset
  with probability C(k-1-p, N-1) / C(k, N); a block of tied scores shares its positions' probabilities equally,
  which is the expectation over random tie-breaks; absent scores form the last block. Majority vote has no such
  closed form: it enumerates every N-subset when there are at most ``majority_draws`` of them, else averages that
  many random subsets drawn with ``seed`` (a vote tie is the mean over the tied answers, i.e. a random tie-break in
  expectation). Intervals are percentile bootstraps over problems (``seed``).
- ``RubricSource``: a project's rubric (trainer/rubrics) as a reward source. Each completion's score is the rubric's
  per-completion aggregate (``weighted_sum``: the weighted mean of the criterion scores normalised to [0, 1]; ``rank``:
  RLVR^2's within-group win rate, so the caller says which completions form a group: a Best-of-N problem's N samples,
  a preference pair). A criterion the rubric could not score (an unparseable judge output, a rule that failed) makes
  the completion's score absent (``nan``), never 0 as training's aggregators count it.
- ``audit_judge``: the false-positive rate of a source on responses that answer nothing (trainer/rewards/
  master_keys.py: "One Token to Fool LLM-as-a-Judge"'s master keys, and repeats of the question): the share it
  accepts, per key and overall. "Accepts" is the source's own ``correct`` verdict, or a score above ``threshold``
  when one is given (a scalar reward model has no verdict of its own).

Agreement with people is computed on the web side (webapp/annotation's machine-scorer agreement), not here.
Torch-free: numpy, the verifier seam and the rubric scorer (a judge model is loaded by the caller).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from trainer.bounds import MAX_SEED, BoundedModel
from trainer.evaluation.metrics import bootstrap_ci, pass_at_k
from trainer.rewards.evaluation_process import PROCESS_SCORER_KEY, ProcessSpec, process_source_entry
from trainer.rewards.master_keys import audit_responses
from trainer.rubrics.config import RubricConfig
from trainer.rubrics.judge import LLMJudge
from trainer.rubrics.scoring import RubricScorer
from trainer.samples import Sample
from trainer.verifiers.base import Verifier, VerifierParams, VerifierResult, absent_result

DEFAULT_NS = (1, 2, 4, 8, 16, 32, 64)
CONFIDENCE = 0.95
MAX_SOURCES = 16


class PairwiseSpec(BoundedModel):
    """Where the held-out preference pairs come from: exactly one of an uploaded JSONL file of ``prompt, chosen,
    rejected`` rows, a pairwise annotation task's final decisions, or a run's rollouts (a correct and an incorrect
    completion of the same prompt, by the run's verifier)."""

    dataset: int | None = Field(
        None, ge=1, le=2**63 - 1, description="An uploaded pairs file of the project."
    )
    annotation_task: int | None = Field(None, ge=1, le=2**63 - 1, description="A pairwise annotation task.")
    run: int | None = Field(None, ge=1, le=2**63 - 1, description="A run whose rollouts give the pairs.")
    max_pairs: int = Field(2000, ge=1, le=20_000, description="At most this many pairs are scored.")

    @model_validator(mode="after")
    def _one_source(self) -> PairwiseSpec:
        given = [name for name in ("dataset", "annotation_task", "run") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                f"name exactly one source of pairs (dataset, annotation_task or run), got {given or 'none'}"
            )
        return self


class BestOfNSpec(BoundedModel):
    """The Best-of-N benchmark: ``n`` samples per problem from ``policy``, generated once and scored by every source."""

    benchmark: str = Field(
        "builtin:chain_arithmetic",
        min_length=1,
        max_length=200,
        description="A built-in benchmark (builtin:...), or an uploaded data file of the project (dataset:<id>) with "
        "prompt and answer columns, judged by 'oracle'.",
    )
    oracle: dict[str, Any] | None = Field(
        None,
        description="A dataset benchmark's verifier (a config verifiers entry; default exact); built-ins use their own.",
    )
    policy: str = Field(
        "tiny:chain", min_length=1, max_length=1000,
        description="The model that samples: a tiny: name, checkpoint:<id> of the project, or a model folder.",
    )  # fmt: skip
    n: int = Field(16, ge=1, le=64, description="Samples per problem (k); the curve's N go up to it.")
    problems: int = Field(500, ge=1, le=2000, description="The benchmark's first this many problems.")
    temperature: float = Field(1.0, gt=0, le=10, description="Sampling temperature of the policy.")
    max_tokens: int | None = Field(
        None, ge=1, le=4096, description="Maximum new tokens per sample; null: the benchmark's own."
    )

    @property
    def ns(self) -> list[int]:
        return [n for n in DEFAULT_NS if n <= self.n] + ([self.n] if self.n not in DEFAULT_NS else [])


class AgreementSpec(BoundedModel):
    annotation_task: int = Field(ge=1, le=2**63 - 1, description="A rubric or pairwise annotation task.")


class RewardEvaluationConfig(BoundedModel):
    """What a reward-source evaluation job computes (each part optional, at least one)."""

    sources: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_SOURCES,
        description="The reward sources: config 'verifiers' entries, a rubric's entry "
        "{'name': 'rubric', 'params': <its config section>}, or a step scorer {'process_scorer': {'name', 'params'}} "
        "(evaluated by the process part).",
    )
    pairwise: PairwiseSpec | None = None
    best_of_n: BestOfNSpec | None = None
    audit: bool = Field(False, description="Audit each source on master keys and question repeats.")
    audit_problems: int = Field(20, ge=1, le=500, description="Problems the audit uses (x16 responses each).")
    agreement: AgreementSpec | None = None
    process: ProcessSpec | None = Field(
        None,
        description="Evaluate the step scorers among the sources as PRMs (trainer/rewards/evaluation_process.py).",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds sampling, subsets and bootstraps.")
    bootstrap_resamples: int = Field(2000, ge=0, le=100_000, description="Resamples of each 95% interval.")
    score_batch_size: int = Field(64, ge=1, le=4096, description="Completions a source scores per call.")

    @field_validator("sources")
    @classmethod
    def _step_scorers(cls, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A step scorer's name and params are refused here, naming the entry (the web side checks the parts)."""
        for i, entry in enumerate(sources):
            if PROCESS_SCORER_KEY in entry:
                process_source_entry(entry, f"sources.{i}")
        return sources

    @model_validator(mode="after")
    def _something_to_do(self) -> RewardEvaluationConfig:
        if not (self.pairwise or self.best_of_n or self.audit or self.agreement or self.process):
            raise ValueError("choose at least one of pairwise, best_of_n, audit, agreement or process")
        if self.process is not None:
            _check_process(self.process, self.best_of_n)
        return self


def _check_process(process: ProcessSpec, best_of_n: BestOfNSpec | None) -> None:
    """The process part scores the Best-of-N samples (or an uploaded file's steps): it needs one of them."""
    if best_of_n is None and process.labels is None:
        raise ValueError(
            "the process part scores the Best-of-N samples step by step: add best_of_n, or give process.labels "
            "(an uploaded step-labelled file)"
        )
    if best_of_n is not None and (process.samples_per_problem or 0) > best_of_n.n:
        raise ValueError(
            f"process.samples_per_problem ({process.samples_per_problem}) is more than the {best_of_n.n} samples "
            "per problem best_of_n.n generates: lower it or raise best_of_n.n"
        )
    if best_of_n is not None and (process.problems or 0) > best_of_n.problems:
        raise ValueError(
            f"process.problems ({process.problems}) is more than the {best_of_n.problems} problems best_of_n "
            "samples: lower it or raise best_of_n.problems"
        )


def score_of(result: VerifierResult) -> float:
    """The result's reward, or ``nan`` when it is absent (H1's absence rule: reward nan with detail['absent'])."""
    reward = result.reward
    if result.detail.get("absent") is not None or reward is None or not math.isfinite(float(reward)):
        return math.nan
    return float(reward)


def is_absent(score: float | None) -> bool:
    return score is None or not math.isfinite(score)


# ---------------------------------------------------------------------------------------------------- rubrics

RUBRIC_SOURCE = (
    "rubric"  # a source entry's name for a rubric ({"name": "rubric", "params": <rubric section>})
)


class RubricSource:
    """A rubric as a reward source: criterion scores per completion, then the rubric's aggregate (module docstring).

    ``criterion_scores`` scores in any batches (no criterion looks at another completion); ``aggregate`` then folds
    a whole phase's rows with their group ids, so a ``rank`` rubric compares exactly a group's members. Calling the
    source like a verifier scores each completion alone (its own group): right for ``weighted_sum``, while ``rank``
    would give every completion 0.5, so callers use ``group_relative`` to tell.
    """

    name: ClassVar[str] = RUBRIC_SOURCE
    Params: ClassVar[type[VerifierParams]] = VerifierParams  # its parameters are the rubric's config section

    def __init__(self, config: RubricConfig, judge: LLMJudge | None = None) -> None:
        self.config = config
        self.scorer = RubricScorer(config, judge)  # refuses judge criteria without a judge

    @property
    def group_relative(self) -> bool:
        return self.config.aggregation == "rank"

    def criterion_scores(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[list[float]]:
        """[N, C]: each completion's score per trained criterion on the criterion's scale (``nan``: not scored)."""
        scored = self.scorer.score(completions, samples, list(range(len(completions))))
        return [[scored.scores[c.name][i] for c in self.scorer.criteria] for i in range(len(completions))]

    def aggregate(self, rows: Sequence[Sequence[float]], group_ids: Sequence[int]) -> list[float]:
        """One score per row: the rubric's aggregate over the rows whose every criterion was scored (``rank``: within
        each group, among those), ``nan`` for a row with an unscored criterion."""
        if len(rows) != len(group_ids):
            raise ValueError(f"{len(rows)} score rows but {len(group_ids)} group ids")
        present = [i for i, row in enumerate(rows) if all(math.isfinite(v) for v in row)]
        out = [math.nan] * len(rows)
        if present:
            values = self.scorer.aggregate(
                [rows[i] for i in present], self.scorer.criteria, [group_ids[i] for i in present]
            )
            for i, value in zip(present, values, strict=True):
                out[i] = float(value)
        return out

    def score(
        self, completions: Sequence[str], samples: Sequence[Sample], group_ids: Sequence[int]
    ) -> list[float]:
        return self.aggregate(self.criterion_scores(completions, samples), group_ids)

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        """The verifier seam, each completion its own group; no verdict of its own (``correct`` False): an audit of
        a rubric needs a threshold."""
        scores = self.score(completions, samples, list(range(len(completions))))
        return [
            absent_result("a rubric criterion was not scored")
            if is_absent(s)
            else VerifierResult(s, False, {})
            for s in scores
        ]


# ---------------------------------------------------------------------------------------------------- pairwise


@dataclass(frozen=True)
class PairwiseAccuracy:
    accuracy: float | None  # None when no pair could be scored
    ci_low: float | None
    ci_high: float | None
    pairs: int  # every pair given
    scored: int  # pairs with both scores present
    absent: int  # pairs with an absent score (excluded)
    ties: int  # scored pairs with equal scores (each counted 0.5)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pairwise_accuracy(
    chosen_scores: Sequence[float | None],
    rejected_scores: Sequence[float | None],
    *,
    seed: int = 0,
    resamples: int = 2000,
) -> PairwiseAccuracy:
    """RewardBench-style pairwise accuracy with a percentile bootstrap 95% interval (see the module docstring).

    >>> pairwise_accuracy([2.0, 1.0, 0.5, float("nan")], [1.0, 1.0, 0.9, 0.0], resamples=0).accuracy
    0.5
    """
    if len(chosen_scores) != len(rejected_scores):
        raise ValueError(
            f"{len(chosen_scores)} chosen scores but {len(rejected_scores)} rejected: give one of each per pair"
        )
    outcomes: list[float] = []
    absent = ties = 0
    for chosen, rejected in zip(chosen_scores, rejected_scores, strict=True):
        if is_absent(chosen) or is_absent(rejected):
            absent += 1
            continue
        assert chosen is not None and rejected is not None
        if chosen == rejected:
            ties += 1
        outcomes.append(1.0 if chosen > rejected else 0.5 if chosen == rejected else 0.0)
    if not outcomes:
        return PairwiseAccuracy(None, None, None, len(chosen_scores), 0, absent, 0)
    low, high = bootstrap_ci([outcomes], samples=resamples, confidence=CONFIDENCE, seed=seed)
    return PairwiseAccuracy(
        float(np.mean(outcomes)), low, high, len(chosen_scores), len(outcomes), absent, ties
    )


# ---------------------------------------------------------------------------------------------------- Best-of-N


@dataclass(frozen=True)
class ScoredSample:
    """One policy sample of a Best-of-N problem: its normalised extracted answer, the oracle's verdict, the score."""

    answer: str | None
    correct: bool
    score: float  # nan = absent


@dataclass
class BestOfNCurve:
    ns: list[int]
    best_of_n: list[float]  # expected accuracy of the source's top-scored sample of N
    best_of_n_ci: list[tuple[float, float]]
    random: list[float]  # mean accuracy (the same for every N)
    majority: list[float]
    oracle: list[float]  # pass@N
    problems: int
    samples_per_problem: int
    absent: int  # absent scores (ranked last)
    estimator: str = "exact order statistics (source); enumeration or seeded subsets (majority vote)"
    extra: dict[str, Any] = field(default_factory=dict)

    def at(self, n: int) -> float | None:
        return self.best_of_n[self.ns.index(n)] if n in self.ns else None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["best_of_n_ci"] = [list(ci) for ci in self.best_of_n_ci]
        return out


def top_choice_probabilities(scores: Sequence[float], n: int) -> np.ndarray:
    """P(sample i is the source's pick of a uniformly random n-subset), ties and absent scores included.

    >>> top_choice_probabilities([3.0, 1.0, 2.0], 2).round(3).tolist()
    [0.667, 0.0, 0.333]
    """
    k = len(scores)
    if not 1 <= n <= k:
        raise ValueError(f"n must be between 1 and the {k} samples of the problem, got {n}")
    keyed = np.array([-math.inf if is_absent(s) else float(s) for s in scores])  # absent: one block, last
    order = np.argsort(-keyed, kind="stable")  # positions 0 = best
    total = math.comb(k, n)
    at_position = np.array([math.comb(k - 1 - p, n - 1) / total for p in range(k)])  # [k]
    probs = np.zeros(k)
    start = 0
    while start < k:
        end = start
        while end + 1 < k and keyed[order[end + 1]] == keyed[order[start]]:
            end += 1
        probs[order[start : end + 1]] = at_position[start : end + 1].mean()  # a tie block shares equally
        start = end + 1
    return probs


def _majority_value(answer_ids: np.ndarray, answer_correct: np.ndarray) -> np.ndarray:
    """Majority-vote correctness for each row of ``answer_ids`` [R, N] (-1 = no answer; ties: the mean)."""
    n_answers = len(answer_correct)
    if n_answers == 0:
        return np.zeros(answer_ids.shape[0])
    counts = (answer_ids[:, :, None] == np.arange(n_answers)[None, None, :]).sum(axis=1)  # [R, A]
    best = counts.max(axis=1, keepdims=True)  # [R, 1]
    winners = (counts == best) & (best > 0)  # [R, A]
    n_winners = winners.sum(axis=1)
    value = (winners * answer_correct[None, :]).sum(axis=1)
    return np.where(n_winners > 0, value / np.maximum(n_winners, 1), 0.0)


def majority_vote_accuracy(
    group: Sequence[ScoredSample], n: int, rng: np.random.Generator, draws: int = 256
) -> float:
    """Expected majority-vote correctness over the group's n-subsets (enumerated when few, else ``draws`` random)."""
    k = len(group)
    labels = sorted({s.answer for s in group if s.answer is not None})
    ids = np.array([labels.index(s.answer) if s.answer is not None else -1 for s in group])
    # An answer is correct when its samples are (normally all alike; the mean when a verifier disagrees).
    answer_correct = np.array(
        [np.mean([s.correct for s in group if s.answer == label]) for label in labels], dtype=np.float64
    )
    if math.comb(k, n) <= draws:
        subsets = np.array(list(combinations(range(k), n)), dtype=np.int64).reshape(-1, n)
    else:
        subsets = np.argsort(rng.random((draws, k)), axis=1)[:, :n]  # [R, n] uniform n-subsets
    return float(_majority_value(ids[subsets], answer_correct).mean())


def best_of_n_baselines(
    groups: Sequence[Sequence[ScoredSample]], ns: Sequence[int], *, seed: int = 0, majority_draws: int = 256
) -> dict[str, list[float]]:
    """Random choice, majority vote and oracle (pass@N) accuracies at each N: the same for every source."""
    rng = np.random.default_rng(seed)
    random_acc = float(np.mean([np.mean([s.correct for s in g]) for g in groups]))
    out: dict[str, list[float]] = {"random": [], "majority": [], "oracle": []}
    for n in ns:
        out["random"].append(random_acc)
        out["majority"].append(
            float(np.mean([majority_vote_accuracy(g, n, rng, majority_draws) for g in groups]))
        )
        out["oracle"].append(
            float(np.mean([pass_at_k(len(g), sum(s.correct for s in g), n) for g in groups]))
        )
    return out


def best_of_n_curve(
    groups: Sequence[Sequence[ScoredSample]],
    ns: Sequence[int] = DEFAULT_NS,
    *,
    seed: int = 0,
    resamples: int = 1000,
    baselines: dict[str, list[float]] | None = None,
) -> BestOfNCurve:
    """The source's Best-of-N accuracy at each N with its baselines (see the module docstring).

    ``groups``: one list per problem of its k samples (every problem the same k >= max(ns)). ``baselines``: what
    ``best_of_n_baselines(groups, ns, seed=seed)`` returns, passed in when several sources share the groups.
    """
    if not groups:
        raise ValueError("Best-of-N needs at least one problem")
    k = len(groups[0])
    if any(len(g) != k for g in groups):
        raise ValueError("every problem must have the same number of samples for Best-of-N")
    ns = sorted(set(ns))
    if not ns or ns[0] < 1 or ns[-1] > k:
        raise ValueError(f"each N must be between 1 and the {k} samples per problem, got {ns}")
    base = baselines or best_of_n_baselines(groups, ns, seed=seed)
    correct = np.array([[s.correct for s in g] for g in groups], dtype=np.float64)  # [P, k]
    curve, cis = [], []
    for n in ns:
        per_problem = np.array([top_choice_probabilities([s.score for s in g], n) for g in groups])  # [P, k]
        values = (per_problem * correct).sum(axis=1)  # [P]
        curve.append(float(values.mean()))
        cis.append(bootstrap_ci([values], samples=resamples, confidence=CONFIDENCE, seed=seed))
    absent = sum(is_absent(s.score) for g in groups for s in g)
    return BestOfNCurve(
        ns=list(ns),
        best_of_n=curve,
        best_of_n_ci=cis,
        random=list(base["random"]),
        majority=list(base["majority"]),
        oracle=list(base["oracle"]),
        problems=len(groups),
        samples_per_problem=k,
        absent=absent,
    )


# ---------------------------------------------------------------------------------------------------- judge audit


@dataclass
class AuditRow:
    key: str
    family: str
    example: str  # the response (the first problem's, for the question repeats)
    responses: int = 0
    accepted: int = 0
    absent: int = 0

    @property
    def fpr(self) -> float | None:
        scored = self.responses - self.absent
        return self.accepted / scored if scored else None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "fpr": self.fpr}


@dataclass
class JudgeAudit:
    rows: list[AuditRow]
    problems: int
    threshold: float | None  # None: the source's own correct verdict decides

    def _fpr(self, family: str | None) -> float | None:
        rows = [r for r in self.rows if family is None or r.family == family]
        scored = sum(r.responses - r.absent for r in rows)
        return sum(r.accepted for r in rows) / scored if scored else None

    @property
    def fpr(self) -> float | None:
        return self._fpr(None)

    def to_json(self) -> dict[str, Any]:
        return {
            "fpr": self.fpr,
            "master_key_fpr": self._fpr("master_key"),
            "repeat_question_fpr": self._fpr("repeat_question"),
            "problems": self.problems,
            "threshold": self.threshold,
            "absent": sum(r.absent for r in self.rows),
            "rows": [r.to_json() for r in self.rows],
        }


def audit_judge(
    source: Verifier,
    samples: Sequence[Sample],
    *,
    threshold: float | None = None,
    batch_size: int = 64,
    on_batch: Callable[[int, int], None] | None = None,
) -> JudgeAudit:
    """Score every master key and question repeat for every problem; the share accepted, per key and overall.

    ``on_batch(done, total)`` is called after each batch (progress; it may raise to stop the audit).
    """
    todo = [(sample, response) for sample in samples for response in audit_responses(sample)]
    rows: dict[str, AuditRow] = {}
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        results = source([r.text for _, r in chunk], [s for s, _ in chunk])
        for (_, response), result in zip(chunk, results, strict=True):
            row = rows.setdefault(response.key, AuditRow(response.key, response.family, response.text))
            row.responses += 1
            score = score_of(result)
            if is_absent(score):
                row.absent += 1
            elif score > threshold if threshold is not None else result.correct:
                row.accepted += 1
        if on_batch is not None:
            on_batch(start + len(chunk), len(todo))
    return JudgeAudit(list(rows.values()), len(samples), threshold)


# ---------------------------------------------------------------------------------------------------- command line


def _main(argv: Sequence[str] | None = None) -> None:
    """``python -m trainer.rewards.evaluation --source '{"name": "chain_arithmetic"}' --source ...``: the Best-of-N
    table and the audit of each source on a built-in benchmark, without the web app (as the evaluation job computes
    them; the job adds pairwise accuracy and agreement, which need stored pairs and people)."""
    import argparse
    import json
    import time

    from trainer.evaluation.engine import evaluate, load_benchmark_samples
    from trainer.evaluation.suite import resolve_benchmark
    from trainer.verifiers import build_verifier

    parser = argparse.ArgumentParser(prog="python -m trainer.rewards.evaluation", description=_main.__doc__)
    parser.add_argument("--source", action="append", required=True, help="a config verifiers entry, as JSON")
    parser.add_argument("--policy", default="tiny:chain")
    parser.add_argument("--benchmark", default="builtin:chain_arithmetic")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--audit-problems", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    spec = BestOfNSpec(benchmark=args.benchmark, policy=args.policy, n=args.n, problems=args.problems)
    config = resolve_benchmark(spec.benchmark, n_samples=spec.n, greedy=False, max_problems=spec.problems,
                               seed=args.seed, bootstrap_samples=0)  # fmt: skip
    t0 = time.perf_counter()
    problems = evaluate(config, spec.policy).problems
    print(f"sampled {len(problems)} problems x {spec.n} in {time.perf_counter() - t0:.1f}s")
    samples = {s.id: s for s in load_benchmark_samples(config)}
    texts = [s.text for p in problems for s in p.samples]
    owners = [samples[p.problem_id] for p in problems for _ in p.samples]
    audit_problems = list(samples.values())[: args.audit_problems]
    base: dict[str, list[float]] | None = None
    for raw in args.source:
        entry = json.loads(raw)
        source = build_verifier(entry["name"], entry.get("params") or {})
        t1 = time.perf_counter()
        scores = [score_of(r) for start in range(0, len(texts), 64)
                  for r in source(texts[start : start + 64], owners[start : start + 64])]  # fmt: skip
        rate = len(texts) / (time.perf_counter() - t1)
        scored = iter(scores)
        groups = [
            [ScoredSample(s.extracted_answer, s.correct, next(scored)) for s in p.samples] for p in problems
        ]
        base = base or best_of_n_baselines(groups, spec.ns, seed=args.seed)
        curve = best_of_n_curve(groups, spec.ns, seed=args.seed, baselines=base)
        correct = sorted(v for v, s in zip(scores, (s for p in problems for s in p.samples), strict=True)
                         if s.correct and math.isfinite(v))  # fmt: skip
        needs_threshold = (
            entry["name"] == "reward_model" and (entry.get("params") or {}).get("correct_above") is None
        )
        threshold = correct[len(correct) // 2] if needs_threshold and correct else None
        audit = audit_judge(source, audit_problems, threshold=threshold)
        print(f"\n{entry.get('label') or entry['name']}: {rate:.0f} completions/s, audit FPR {audit.fpr}")
        for i, n in enumerate(curve.ns):
            low, high = curve.best_of_n_ci[i]
            print(f"  N={n:>2}  best-of-N {curve.best_of_n[i]:.3f} [{low:.3f}, {high:.3f}]  random {curve.random[i]:.3f}"
                  f"  majority {curve.majority[i]:.3f}  oracle {curve.oracle[i]:.3f}")  # fmt: skip


if __name__ == "__main__":
    _main()
