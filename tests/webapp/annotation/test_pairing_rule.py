"""Which completions become pairs (Django-free): two of one group, rewards differing first, spread over
groups, only differing verdicts when asked, and sides drawn with the seed."""

from __future__ import annotations

import pytest

from webapp.annotation.pairing import (
    PairCandidate,
    PairingRule,
    choose_pairs,
    describe_pairing,
    pairing_rule_from_dict,
    side_order,
)
from webapp.core.errors import InvalidInput


def group(key: str, rewards: list[float | None], start: int) -> list[PairCandidate]:
    return [
        PairCandidate(id=start + i, group=key, reward=r, correct=None if r is None else r > 0.5)
        for i, r in enumerate(rewards)
    ]


def test_every_pair_is_two_completions_of_one_group() -> None:
    candidates = group("a", [1, 0, 1, 0], 0) + group("b", [1, 1, 0, 0], 10)
    pairs = choose_pairs(candidates, PairingRule(n=12, seed=1))
    by_id = {c.id: c.group for c in candidates}
    assert len(pairs) == 12
    assert all(by_id[p.left] == by_id[p.right] and p.left != p.right for p in pairs)
    assert len({frozenset((p.left, p.right)) for p in pairs}) == 12  # no pair twice, in either order


def test_pairs_whose_rewards_differ_come_first() -> None:
    candidates = group("a", [1, 1, 1, 0], 0)  # 3 differing pairs (with id 3), 3 equal ones
    pairs = choose_pairs(candidates, PairingRule(n=3, seed=5))
    assert all(3 in (p.left, p.right) for p in pairs)


def test_groups_are_visited_in_rounds_before_a_second_pair_of_one_prompt() -> None:
    candidates = group("a", [1, 0, 1, 0], 0) + group("b", [1, 0, 1, 0], 10) + group("c", [1, 0], 20)
    pairs = choose_pairs(candidates, PairingRule(n=3, seed=0))
    assert {min(p.left, p.right) // 10 for p in pairs} == {0, 1, 2}


def test_only_differing_outcome_keeps_pairs_with_one_correct_and_one_incorrect() -> None:
    candidates = group("a", [1, 1, 0, None], 0)
    pairs = choose_pairs(candidates, PairingRule(n=50, only_differing_outcome=True))
    correct = {c.id: c.correct for c in candidates}
    assert len(pairs) == 2 and all(correct[p.left] != correct[p.right] for p in pairs)
    assert all(correct[p.left] is not None and correct[p.right] is not None for p in pairs)


def test_the_same_seed_gives_the_same_pairs_and_sides_and_sides_vary() -> None:
    candidates = [c for k in range(20) for c in group(f"g{k}", [1, 0], 10 * k)]
    first = choose_pairs(candidates, PairingRule(n=20, seed=7))
    assert first == choose_pairs(candidates, PairingRule(n=20, seed=7))
    swapped = sum(p.swapped for p in first)
    assert 0 < swapped < 20  # both orders occur, so a habit of picking one side cannot follow the source
    for p in first:
        assert (p.left > p.right) == p.swapped  # candidates pair in id order; a swap puts the second left
    assert side_order(3, 10) == side_order(3, 10) and len(side_order(3, 10)) == 10


def test_a_lone_completion_gives_no_pair() -> None:
    assert choose_pairs(group("a", [1], 0) + group("b", [0], 5), PairingRule(n=5)) == []


@pytest.mark.parametrize(
    ("data", "field"),
    [({"n": 0}, "pairing.n"), ({"n": 5001}, "pairing.n"), ({"seed": -1}, "pairing.seed"), ({"step": "3"}, "pairing.step"),
     ({"only_differing_outcome": "yes"}, "pairing.only_differing_outcome"), ({"colour": 1}, "pairing.colour")],
)  # fmt: skip
def test_a_bad_rule_names_its_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        pairing_rule_from_dict(data)
    assert field in err.value.fields


def test_the_rule_in_words() -> None:
    text = describe_pairing({"n": 4, "seed": 2, "step": None, "only_differing_outcome": True, "resolved_step": 7},
                            source_kind="run")  # fmt: skip
    assert (
        text
        == "Up to 4 pairs of completions of one prompt at step 7 (rewards differing first, seed 2), only pairs whose verdicts differ"
    )
    upload = describe_pairing({"filename": "p.jsonl", "rows": 3, "seed": 1}, source_kind="upload")
    assert upload == "Every pair of the uploaded file (p.jsonl): 3 rows, sides drawn with seed 1"
