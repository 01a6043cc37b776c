"""Where annotators disagree: the spread of the submitted scores of each item, per criterion and overall.

Django-free so it is tested on plain values. An item's spread on a criterion needs two or more people's
scores (one score has no spread). Per criterion: the range (highest minus lowest) and the population
standard deviation of the scores, both on the criterion's own scale, plus the range as a share of the
scale's width (a binary split and a 1-vs-5 on a 1-5 scale are both 1.0). Overall: the mean of those shares
over the criteria the item has a spread on, so criteria on different scales weigh the same; the mean of the
standard deviations as shares of the width breaks ties.

Items are ranked most disputed first (largest range, then largest standard deviation; item order breaks
the remaining ties, so the ranking is stable).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# criterion name -> item id -> annotator id -> score (agreement.Ratings per criterion)
TaskRatings = Mapping[str, Mapping[int, Mapping[int, float]]]


@dataclass(frozen=True)
class Spread:
    """The scores of two or more people on one criterion of one item."""

    scores: int
    low: float
    high: float
    range: float
    std: float  # population standard deviation, on the criterion's scale
    share: float  # range / (scale max - scale min)
    std_share: float


@dataclass(frozen=True)
class ItemSpread:
    item_id: int
    position: int
    annotators: int  # the most people who scored any one criterion of the item
    criteria: dict[str, Spread] = field(default_factory=dict)

    @property
    def overall(self) -> float:
        """Mean range share over the criteria with a spread (0.0 when none)."""
        return sum(s.share for s in self.criteria.values()) / len(self.criteria) if self.criteria else 0.0

    @property
    def overall_std(self) -> float:
        return sum(s.std_share for s in self.criteria.values()) / len(self.criteria) if self.criteria else 0.0

    @property
    def disputed(self) -> list[str]:
        """The criteria on which people gave different scores."""
        return [name for name, s in self.criteria.items() if s.range > 0]


def spread_of(scores: Sequence[float], *, width: float) -> Spread | None:
    """The spread of one criterion's scores, or None below two scores."""
    if len(scores) < 2:
        return None
    low, high = min(scores), max(scores)
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    width = width if width > 0 else 1.0
    return Spread(len(scores), low, high, high - low, std, (high - low) / width, std / width)


def item_spreads(
    ratings: TaskRatings, *, criteria: Sequence[Mapping[str, Any]], positions: Mapping[int, int]
) -> list[ItemSpread]:
    """Every item two or more people scored (on at least one criterion), in item order."""
    per_item: dict[int, dict[str, Spread]] = {}
    people: dict[int, int] = {}
    for criterion in criteria:
        name = criterion["name"]
        width = float(criterion["max_value"]) - float(criterion["min_value"])
        for item_id, by_annotator in ratings.get(name, {}).items():
            people[item_id] = max(people.get(item_id, 0), len(by_annotator))
            found = spread_of(list(by_annotator.values()), width=width)
            if found is not None:
                per_item.setdefault(item_id, {})[name] = found
    spreads = [
        ItemSpread(item_id, positions.get(item_id, 0), people[item_id], found)
        for item_id, found in per_item.items()
    ]
    return sorted(spreads, key=lambda s: s.position)


def ranked(spreads: Sequence[ItemSpread], *, criterion: str | None = None) -> list[ItemSpread]:
    """Most disputed first, overall or on one criterion (then only the items with a spread on it)."""
    if criterion is None:
        return sorted(spreads, key=lambda s: (-s.overall, -s.overall_std, s.position))
    on_it = [s for s in spreads if criterion in s.criteria]
    return sorted(on_it, key=lambda s: (-s.criteria[criterion].range, -s.criteria[criterion].std, s.position))
