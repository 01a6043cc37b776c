"""k distinct annotators per item, and every annotator's load within one of the others'."""

from __future__ import annotations

from collections import Counter

import pytest

from webapp.annotation.balance import assign_annotators
from webapp.core.errors import ApplicationError


@pytest.mark.parametrize(("items", "people", "k"), [(20, 2, 2), (20, 3, 2), (17, 5, 3), (7, 4, 1)])
def test_each_item_gets_k_distinct_annotators_and_loads_differ_by_at_most_one(
    items: int, people: int, k: int
) -> None:
    plan = assign_annotators(item_ids=range(items), annotator_ids=[10 + p for p in range(people)], k=k)
    assert all(len(chosen) == len(set(chosen)) == k for chosen in plan.values())
    load = Counter(a for chosen in plan.values() for a in chosen)
    assert set(load) == {10 + p for p in range(people)}
    assert max(load.values()) - min(load.values()) <= 1


def test_existing_load_is_topped_up_least_busy_first() -> None:
    plan = assign_annotators(item_ids=[1, 2], annotator_ids=[7, 8, 9], k=1, load={7: 5, 8: 5, 9: 0})
    assert plan == {1: [9], 2: [9]}


def test_asking_for_more_annotators_than_members_says_how_to_fix_it() -> None:
    with pytest.raises(ApplicationError, match="Invite more annotators or lower annotators_per_item"):
        assign_annotators(item_ids=[1], annotator_ids=[7], k=2)
