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
    alpha, note = krippendorff_alpha(matrix, level) if units else (None, "No item has been scored by two or more people yet.")
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
        return JudgeAgreement(None, None, 0, ties, level, "No item has both a machine score and a human score yet.")
    tolerance = RANGE_TOLERANCE * (max_value - min_value) if scale == "range" else 1e-9
    exact = sum(1 for m, h in pairs if abs(m - h) <= tolerance) / len(pairs)
    alpha, note = krippendorff_alpha([[m for m, _ in pairs], [h for _, h in pairs]], level)
    return JudgeAgreement(alpha, exact, len(pairs), ties, level, note)
