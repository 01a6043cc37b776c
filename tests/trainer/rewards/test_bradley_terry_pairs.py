"""Preference pairs for Bradley-Terry training: from verifier outcomes, from a JSONL file (bad lines named with their
field), from the annotation selector's dicts; deduplicated and capped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.errors import DataError
from trainer.rewards.pairs import (
    Outcome,
    PreferencePair,
    dedupe,
    pairs_from_dicts,
    pairs_from_jsonl,
    pairs_from_outcomes,
    pairs_hash,
)


def _outcomes() -> list[Outcome]:
    rows = [("a", "2", True), ("a", "3", False), ("a", "4", False), ("a", "2", True), ("b", "9", False),
            ("c", "1", True), ("d", "7", True), ("d", "8", False)]  # fmt: skip
    return [Outcome(pid, f"{pid}=", text, ok) for pid, text, ok in rows]


def test_outcomes_pair_each_correct_with_each_incorrect_completion_of_the_same_prompt() -> None:
    pairs = pairs_from_outcomes(_outcomes())
    assert pairs == [
        *sorted([PreferencePair("a=", "2", "3"), PreferencePair("a=", "2", "4")], key=pairs.index),
        PreferencePair("d=", "7", "8"),
    ]
    assert all(p.prompt in ("a=", "d=") for p in pairs)  # b (all wrong) and c (all right) give none


def test_outcome_pairs_are_capped_per_prompt_and_drawn_the_same_way_for_a_seed() -> None:
    many = [Outcome("p", "p=", f"right {i}", True) for i in range(5)]
    many += [Outcome("p", "p=", f"wrong {i}", False) for i in range(5)]
    first = pairs_from_outcomes(many, per_prompt=4, seed=1)
    assert len(first) == 4 and first == pairs_from_outcomes(many, per_prompt=4, seed=1)
    assert {p.chosen for p in first} <= {f"right {i}" for i in range(5)}
    assert first != pairs_from_outcomes(many, per_prompt=4, seed=2)
    with pytest.raises(DataError, match="per_prompt"):
        pairs_from_outcomes(many, per_prompt=0)


def test_a_jsonl_file_gives_its_pairs_once_each(tmp_path: Path) -> None:
    rows = [{"prompt": "1+1=", "chosen": "2", "rejected": "3"}] * 2 + [
        {"prompt": "2+2=", "chosen": "4", "rejected": "5", "extra": 1}
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert pairs_from_jsonl(path) == [PreferencePair("1+1=", "2", "3"), PreferencePair("2+2=", "4", "5")]


def test_bad_lines_are_named_with_their_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        json.dumps({"prompt": "a", "chosen": "x", "rejected": "y"}) + "\n"
        + json.dumps({"prompt": "a", "chosen": "x"}) + "\n"
        + "{not json\n"
        + json.dumps({"prompt": "a", "chosen": 3, "rejected": "y"}) + "\n"
        + json.dumps({"prompt": "a", "chosen": "same", "rejected": "same"}) + "\n"
    )  # fmt: skip
    with pytest.raises(DataError) as err:
        pairs_from_jsonl(path)
    message = str(err.value)
    assert "4 bad pair(s)" in message
    assert "line 2 has no 'rejected' field" in message
    assert "line 3" in message
    assert "line 4 field 'chosen' is int, not text" in message
    assert "line 5 fields 'chosen' and 'rejected' are the same text" in message


def test_an_empty_source_is_an_error_that_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(DataError, match="no preference pairs"):
        pairs_from_jsonl(path)
    with pytest.raises(DataError, match="no preference pairs"):
        pairs_from_dicts([], source="annotation task 'x'")


def test_annotation_dicts_are_checked_like_file_rows() -> None:
    good = {"prompt": "q", "chosen": "a", "rejected": "b"}
    assert pairs_from_dicts([good, good]) == [PreferencePair("q", "a", "b")]
    with pytest.raises(DataError, match="item 2 field 'prompt' contains a NUL"):
        pairs_from_dicts([good, {**good, "prompt": "q\x00"}])


def test_dedupe_keeps_the_first_order_and_the_hash_follows_the_pairs() -> None:
    a, b = PreferencePair("q", "a", "b"), PreferencePair("q", "b", "a")
    assert dedupe([a, b, a]) == [a, b]
    assert pairs_hash([a, b]) != pairs_hash([b, a]) and pairs_hash([a]) == pairs_hash([a])
