"""Rubric aggregators: the criterion scores of a batch -> one reward per rollout (a registry, one signature).

``aggregate(scores, criteria, group_ids) -> rewards`` where ``scores[i][k]`` is rollout i's score for
criterion k on that criterion's scale (``nan`` = could not be scored, e.g. an unparseable judge output),
``criteria`` the trained criteria in the same order, ``group_ids[i]`` the rollout's prompt group. Both
aggregators return rewards in [0, 1]. Pure Python: no torch.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol

from trainer.registry import Registry


class CriterionSpec(Protocol):
    """What an aggregator reads of a criterion (trainer/rubrics/config.py's CriterionSpec has it)."""

    @property
    def weight(self) -> float: ...

    def normalise(self, score: float) -> float: ...


Aggregator = Callable[[Sequence[Sequence[float]], Sequence[CriterionSpec], Sequence[int]], list[float]]

AGGREGATORS: Registry[Aggregator] = Registry("rubric aggregation")


def _weighted_mean(values: Sequence[float], criteria: Sequence[CriterionSpec]) -> float:
    total = sum(c.weight for c in criteria)
    return sum(v * c.weight for v, c in zip(values, criteria, strict=True)) / total


def _check(
    scores: Sequence[Sequence[float]], criteria: Sequence[CriterionSpec], group_ids: Sequence[int]
) -> None:
    if len(scores) != len(group_ids):
        raise ValueError(
            f"{len(scores)} score rows but {len(group_ids)} group ids: give one group id per rollout"
        )
    for row in scores:
        if len(row) != len(criteria):
            raise ValueError(f"a score row has {len(row)} values for {len(criteria)} criteria")


@AGGREGATORS.register("weighted_sum")
def weighted_sum(
    scores: Sequence[Sequence[float]], criteria: Sequence[CriterionSpec], group_ids: Sequence[int]
) -> list[float]:
    """Linear normalised-sum aggregation, the baseline RLVR^2 argues against (METHODS.md §3b, ``001:L7``).

    Each score is mapped to [0, 1] by its criterion's scale (binary 0/1, likert 1..5, range min..max),
    then averaged with the criterion weights (divided by the sum of weights, so the reward stays in [0, 1];
    the paper's "weighted sum" leaves the normalisation of weights open). A ``nan`` score counts as 0.
    Groups are ignored.
    """
    _check(scores, criteria, group_ids)
    return [
        _weighted_mean(
            [0.0 if math.isnan(s) else c.normalise(s) for s, c in zip(row, criteria, strict=True)], criteria
        )
        for row in scores
    ]


def win_rate_utilities(values: Sequence[float]) -> list[float]:
    """Borda-style latent utility of each member of one group on one criterion, in [0, 1].

    The comparison matrix is ``W[i][j] = 1`` if i scored higher than j, ``0.5`` on a tie, ``0`` if lower;
    ``nan`` loses to every number and ties with another ``nan``. Utility = mean over j != i of W[i][j]
    (the win rate). A group of one gets 0.5.
    """
    n = len(values)
    if n == 1:
        return [0.5]

    def beats(a: float, b: float) -> float:
        if math.isnan(a) or math.isnan(b):
            return 0.5 if math.isnan(a) and math.isnan(b) else (0.0 if math.isnan(a) else 1.0)
        return 1.0 if a > b else 0.5 if a == b else 0.0

    return [sum(beats(values[i], values[j]) for j in range(n) if j != i) / (n - 1) for i in range(n)]


@AGGREGATORS.register("rank")
def rank(
    scores: Sequence[Sequence[float]], criteria: Sequence[CriterionSpec], group_ids: Sequence[int]
) -> list[float]:
    """RLVR^2, rubric-based ranking (METHODS.md §3b, ``001:L7``).

    For each criterion, the group's scores become within-group pairwise ordinal outcomes (win / tie /
    loss; raw magnitudes are discarded, so heterogeneous scales need no calibration); a latent utility
    per rollout is recovered from that comparison matrix; the criterion utilities are merged by the
    criterion weights (weighted mean, in [0, 1]).

    How ours differs: the paper does not name its utility estimator. We use the Borda win rate
    (``win_rate_utilities``) rather than a Bradley-Terry fit because our comparison matrix is complete
    (every pair in the group is compared) and derived from one score per rollout, so it is transitive;
    on such a matrix the Bradley-Terry MLE ranks rollouts exactly as the win rate does but diverges to
    infinite utilities whenever one rollout beats all others (it needs an arbitrary prior to exist),
    while the win rate is closed-form, bounded and equals the normalised mid-rank. The paper's
    "objective-preserving attribute adjustment" (auxiliary covariates) is not implemented.
    """
    _check(scores, criteria, group_ids)
    members: dict[int, list[int]] = defaultdict(list)
    for i, g in enumerate(group_ids):
        members[g].append(i)
    rewards = [0.0] * len(scores)
    for rows in members.values():
        per_criterion = [win_rate_utilities([scores[i][k] for i in rows]) for k in range(len(criteria))]
        for position, i in enumerate(rows):
            rewards[i] = _weighted_mean([u[position] for u in per_criterion], criteria)
    return rewards
