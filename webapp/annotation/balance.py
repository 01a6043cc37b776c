"""Who annotates which item: ``k`` distinct annotators per item, loads kept within one of each other.

Greedy least-loaded assignment: each item goes to the ``k`` annotators with the fewest items so far
(``load`` counts what they already hold, so a second batch tops up the least busy first); ties are broken
by a seeded shuffle of the annotators, so no one is always first. With equal starting loads every
annotator ends with ``floor`` or ``ceil`` of ``items * k / annotators`` items.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from webapp.core.errors import ApplicationError


def assign_annotators(
    *,
    item_ids: Sequence[int],
    annotator_ids: Sequence[int],
    k: int,
    load: Mapping[int, int] | None = None,
    seed: int = 0,
) -> dict[int, list[int]]:
    """item id -> the ids of its ``k`` annotators (distinct)."""
    annotators = list(dict.fromkeys(annotator_ids))
    if k < 1:
        raise ApplicationError("Each item needs at least one annotator (annotators_per_item >= 1).")
    if len(annotators) < k:
        raise ApplicationError(
            f"Each item needs {k} different annotators but the project has {len(annotators)} member(s) with "
            "the annotator role or higher. Invite more annotators or lower annotators_per_item."
        )
    rng = random.Random(seed)
    tie_order = {a: i for i, a in enumerate(rng.sample(annotators, len(annotators)))}
    counts = {a: (load or {}).get(a, 0) for a in annotators}
    plan: dict[int, list[int]] = {}
    for item in item_ids:
        chosen = sorted(annotators, key=lambda a: (counts[a], tie_order[a]))[:k]
        for a in chosen:
            counts[a] += 1
        plan[item] = sorted(chosen)
    return plan
