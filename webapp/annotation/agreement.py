"""Agreement between annotators, and between a criterion's judge/rule scorer and the people.

Krippendorff's alpha comes from the maintained ``krippendorff`` package (PyPI), never from hand-written
code. The level of measurement follows the criterion's scale: binary -> nominal, 1-5 -> ordinal, numeric
range -> interval (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability", section on metrics).

An item counts towards alpha only when at least two people scored it (a unit with one value is not
pairable and carries no information about agreement); ``items`` in each result is that count.

Judge-vs-human compares the machine score with the people's consensus per item: the majority for a
binary criterion (an even split has no majority and is left out, counted in ``ties``), the mean rounded
to the nearest scale point for 1-5 (so it stays an ordinal category), the plain mean for a numeric range.
"Exact agreement" is equality with that consensus; for a numeric range it is "within 5% of the range
width", since two real numbers are rarely equal.

Any machine scorer against the people (``scorer_vs_people``, fed by machine_scorers.py): alpha at the
interval level with the machine and the people's mean as two coders, plus Spearman's rho (Pearson's r of
average ranks, the tie-corrected form) and Pearson's r, computed here with numpy (scipy is not a
dependency); undefined figures are None with the reason in ``note``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import krippendorff
import numpy as np

Level = Literal["nominal", "ordinal", "interval"]
LEVEL_BY_SCALE: dict[str, Level] = {"binary": "nominal", "likert5": "ordinal", "range": "interval"}
RANGE_TOLERANCE = 0.05  # share of (max - min) within which a numeric-range score counts as equal

# item id -> annotator id -> score
Ratings = Mapping[int, Mapping[int, float]]


@dataclass(frozen=True)
class AlphaResult:
    alpha: float | None  # None: not computable (see note)
    items: int  # items behind the number (scored by two or more)
    level: Level
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JudgeAgreement:
    alpha: float | None
    exact_agreement: float | None  # share of items where the machine equals the people's consensus
    items: int  # items with a machine score and a human consensus
    ties: int  # binary items whose people split evenly (left out)
    level: Level
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def level_for_scale(scale: str) -> Level:
    return LEVEL_BY_SCALE[scale]


def krippendorff_alpha(matrix: list[list[float | None]], level: Level) -> tuple[float | None, str]:
    """Alpha of a coders x units matrix (None = not scored), or None and the reason it is undefined."""
    data = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    values = data[~np.isnan(data)]
    if values.size == 0 or data.shape[1] == 0:
        return None, "No item has been scored by two or more people yet."
    if np.unique(values).size < 2:
        return None, "Every score is the same value: alpha is undefined when there is no variation."
    result = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    if math.isnan(result):
        return None, "Alpha is undefined for these scores (no pairable variation)."
    return result, ""


def criterion_alpha(ratings: Ratings, *, scale: str) -> AlphaResult:
    """Alpha among the annotators for one criterion, over the items two or more of them scored."""
    level = level_for_scale(scale)
    units = [item for item in sorted(ratings) if len(ratings[item]) >= 2]
    coders = sorted({a for item in units for a in ratings[item]})
    matrix = [[ratings[item].get(coder) for item in units] for coder in coders]
    alpha, note = (
        krippendorff_alpha(matrix, level)
        if units
        else (None, "No item has been scored by two or more people yet.")
    )
    return AlphaResult(alpha=alpha, items=len(units), level=level, note=note)


def human_consensus(scores: list[float], *, scale: str) -> float | None:
    """The people's score for one item: majority (binary; None on an even split), rounded mean (1-5), mean."""
    if not scores:
        return None
    if scale == "binary":
        top = Counter(scores).most_common(2)
        return None if len(top) == 2 and top[0][1] == top[1][1] else top[0][0]
    mean = sum(scores) / len(scores)
    return float(math.floor(mean + 0.5)) if scale == "likert5" else mean


def judge_vs_human(
    ratings: Ratings, machine: Mapping[int, float], *, scale: str, min_value: float, max_value: float
) -> JudgeAgreement:
    """Alpha and exact-agreement rate between the machine score and the people's consensus, per item."""
    level = level_for_scale(scale)
    pairs: list[tuple[float, float]] = []
    ties = 0
    for item, score in sorted(machine.items()):
        people = list(ratings.get(item, {}).values())
        if not people:
            continue
        consensus = human_consensus(people, scale=scale)
        if consensus is None:
            ties += 1
            continue
        pairs.append((float(score), consensus))
    if not pairs:
        return JudgeAgreement(
            None, None, 0, ties, level, "No item has both a machine score and a human score yet."
        )
    tolerance = RANGE_TOLERANCE * (max_value - min_value) if scale == "range" else 1e-9
    exact = sum(1 for m, h in pairs if abs(m - h) <= tolerance) / len(pairs)
    alpha, note = krippendorff_alpha([[m for m, _ in pairs], [h for _, h in pairs]], level)
    return JudgeAgreement(alpha, exact, len(pairs), ties, level, note)


@dataclass(frozen=True)
class ScorerAgreement:
    """Any machine scorer against the people's mean score per item (both on a 0-1 scale where known)."""

    alpha: float | None  # Krippendorff's alpha, interval level, machine and people's mean as two coders
    spearman: float | None
    pearson: float | None
    items: int  # items with both a machine score and at least one person's score
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, tied values sharing the mean of their ranks (what Spearman's rho ranks with)."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    ranks[order] = np.arange(1, len(values) + 1, dtype=float)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson's r, or None when either side has no variation (r is undefined then)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    return float((dx * dy).sum() / math.sqrt(float((dx * dx).sum() * (dy * dy).sum())))


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rho: Pearson's r of the average ranks (the tie-corrected form)."""
    return pearson(average_ranks(x), average_ranks(y))


def scorer_vs_people(machine: Mapping[int, float], people: Mapping[int, float]) -> ScorerAgreement:
    """Agreement of a machine score with the people's mean, over the items that have both.

    Alpha (interval) measures absolute agreement, so it is only meaningful when both sides are on one
    scale (the caller normalises them to 0-1 where the scale is known); the two correlations only look at
    whether the orders (Spearman) or the linear trends (Pearson) agree, whatever the scales.
    """
    items = sorted(set(machine) & set(people))
    if not items:
        return ScorerAgreement(
            None, None, None, 0, "No item has both this machine score and a person's score yet."
        )
    x = np.array([machine[i] for i in items], dtype=float)
    y = np.array([people[i] for i in items], dtype=float)
    alpha, alpha_note = krippendorff_alpha([list(x), list(y)], "interval")
    rho, r = spearman(x, y), pearson(x, y)
    notes = [alpha_note] if alpha is None else []
    if rho is None:
        why = (
            "one item is not enough"
            if len(items) < 2
            else (f"every item got the same score from {'the machine' if np.ptp(x) == 0 else 'the people'}")
        )
        notes.append(f"Correlations are undefined: {why}.")
    return ScorerAgreement(alpha, rho, r, len(items), " ".join(notes))
