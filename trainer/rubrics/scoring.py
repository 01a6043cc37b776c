"""Score a batch against a rubric and fold the result into the step's ScoreBatch (the training hook).

For every trained criterion (rule or judge; human criteria are skipped) each rollout gets a score on the
criterion's scale (``nan`` if it could not be scored). The aggregator named in the config turns the
scores into one rubric reward per rollout, which is added to the verifiers' total with
``rubric.reward_weight``. The rollout browser shows, per rollout, ``rubric/<criterion>`` (the score
normalised to [0, 1], 0 when unscorable) and ``rubric`` (the aggregated reward) next to the verifiers,
with details holding the raw score, the scorer and the reason.

In a data-parallel run each process scores the completions of its own groups: rules score one completion at a
time and both aggregators work within a group, so every process gets its part of the 1-process rewards. A
greedy judge (top_k 1, the default) is the same; a sampling one draws one random stream over each call's
verdicts, so it is refused with num_processes > 1 (trainer/config/experiment.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from trainer.jsonable import to_jsonable
from trainer.rubrics.aggregators import AGGREGATORS
from trainer.rubrics.config import CriterionSpec, RubricConfig
from trainer.rubrics.judge import LLMJudge
from trainer.rubrics.rules import Rule, build_rule, run_rule
from trainer.samples import Sample
from trainer.verifiers.scoring import ScoreBatch

RUBRIC_KEY = "rubric"


def criterion_key(name: str) -> str:
    """The per-verifier / detail key of one criterion: ``rubric/<name>``."""
    return f"{RUBRIC_KEY}/{name}"


@dataclass
class RubricScores:
    """Per criterion: scores on its scale (nan = unscorable) and details; plus the aggregated reward."""

    scores: dict[str, list[float]]  # criterion name -> [N]
    details: dict[str, list[dict[str, Any]]]  # criterion name -> [N]
    reward: list[float]  # [N] in [0, 1]


class RubricScorer:
    """Built once per run from the ``rubric`` config section (and the judge, when any criterion needs one)."""

    def __init__(self, config: RubricConfig, judge: LLMJudge | None = None) -> None:
        if config.uses_judge and judge is None:
            raise ValueError("this rubric has judge criteria: pass the LLMJudge built by load_judge")
        self.config = config
        self.criteria = config.trained_criteria
        self.rules: dict[str, Rule] = {
            c.name: build_rule(c.rule.type, c.rule.params)
            for c in self.criteria
            if c.rule is not None and c.scorer == "rule"
        }
        self.judge = judge
        self.aggregate = AGGREGATORS.get(config.aggregation)

    def score(
        self, completions: Sequence[str], samples: Sequence[Sample], group_ids: Sequence[int]
    ) -> RubricScores:
        scores: dict[str, list[float]] = {}
        details: dict[str, list[dict[str, Any]]] = {}
        for criterion in self.criteria:
            if criterion.scorer == "rule":
                outcomes = run_rule(self.rules[criterion.name], completions, samples)
                low, high = criterion.bounds
                scores[criterion.name] = [
                    math.nan if "error" in o.detail else low + o.fraction * (high - low) for o in outcomes
                ]
                details[criterion.name] = [o.detail for o in outcomes]
        if self.judge is not None:
            for name, verdicts in self.judge.judge(self.criteria, completions, samples).items():
                scores[name] = [v.score for v in verdicts]
                details[name] = [v.detail for v in verdicts]
        matrix = [[scores[c.name][i] for c in self.criteria] for i in range(len(completions))]  # [N, C]
        return RubricScores(scores, details, self.aggregate(matrix, self.criteria, group_ids))


def _detail(criterion: CriterionSpec, score: float, detail: dict[str, Any]) -> dict[str, Any]:
    """The scorer's detail plus the raw score on the criterion's scale (None when unscorable)."""
    low, high = criterion.bounds
    scored = None if math.isnan(score) else score
    summary = f"{criterion.scorer}: {'unscored' if scored is None else f'{scored:g}'} on [{low:g}, {high:g}]"
    return to_jsonable(
        {
            "reason": summary,  # the rollout browser shows reason / extracted / error (static/js/rollouts.js)
            **detail,
            "score": scored,
            "scale": criterion.scale,
            "scorer": criterion.scorer,
            "weight": criterion.weight,
        }
    )


def add_rubric_scores(scores: ScoreBatch, rubric: RubricScores, scorer: RubricScorer) -> ScoreBatch:
    """The ScoreBatch with ``rubric/<criterion>`` and ``rubric`` keys added and the rubric reward in the total."""
    weight = scorer.config.reward_weight
    per_verifier = dict(scores.per_verifier)
    details = [dict(d) for d in scores.details]
    for criterion in scorer.criteria:
        raw = rubric.scores[criterion.name]
        key = criterion_key(criterion.name)
        per_verifier[key] = [0.0 if math.isnan(s) else criterion.normalise(s) for s in raw]
        for i, s in enumerate(raw):
            details[i][key] = _detail(criterion, s, rubric.details[criterion.name][i])
    per_verifier[RUBRIC_KEY] = list(rubric.reward)
    for i in range(len(details)):
        details[i][RUBRIC_KEY] = {
            "name": scorer.config.name,
            "aggregation": scorer.config.aggregation,
            "weight": weight,
        }
    total = [t + weight * r for t, r in zip(scores.total, rubric.reward, strict=True)]
    return replace(
        scores, total=total, per_verifier=per_verifier, correct=list(scores.correct), details=details
    )


def reaggregate_rubric(scores: ScoreBatch, scorer: RubricScorer, group_ids: Sequence[int]) -> ScoreBatch:
    """The rubric reward aggregated again over whole groups, from the raw criterion scores in the details.

    Allocators that spread a group over several generation calls ('vigor', 'early_abandon', 'sara';
    trainer/methods/allocation.py) see each call scored on its own, so a group-relative aggregator ('rank')
    compared only that call's part of the group. Once the step's groups are complete this recomputes the reward over each
    whole group and moves the total by the difference (the verifiers' part of the total is unchanged).
    """

    def raw(i: int, criterion: CriterionSpec) -> float:
        value = scores.details[i][criterion_key(criterion.name)].get("score")
        return math.nan if value is None else float(value)

    matrix = [[raw(i, c) for c in scorer.criteria] for i in range(len(scores.total))]  # [N, C]
    reward = scorer.aggregate(matrix, scorer.criteria, list(group_ids))
    old, weight = scores.per_verifier[RUBRIC_KEY], scorer.config.reward_weight
    total = [t + weight * (new - was) for t, new, was in zip(scores.total, reward, old, strict=True)]
    per_verifier = {**scores.per_verifier, RUBRIC_KEY: list(reward)}
    return replace(scores, total=total, per_verifier=per_verifier, correct=list(scores.correct))


def score_rubric(
    scorer: RubricScorer,
    scores: ScoreBatch,
    completions: Sequence[str],
    samples: Sequence[Sample],
    group_ids: Sequence[int],
) -> ScoreBatch:
    """The training hook: score the batch against the rubric and return the extended ScoreBatch."""
    return add_rubric_scores(scores, scorer.score(completions, samples, group_ids), scorer)


def build_rubric_scorer(
    config: RubricConfig | None, dtype: str, device: Any, seed: int = 0
) -> RubricScorer | None:
    """The run's rubric scorer (loading the frozen judge model when a criterion needs it), or None."""
    if config is None:
        return None
    judge = None
    if config.uses_judge:
        from trainer.rubrics.judge import load_judge

        judge = load_judge(config.judge_model, dtype, device, seed)
    return RubricScorer(config, judge)
