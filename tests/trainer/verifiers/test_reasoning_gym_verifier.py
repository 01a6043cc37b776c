"""The reasoning-gym verifier: the task's own scorer, run in timeout-pool workers."""

from typing import Any

import pytest
import reasoning_gym

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier


@pytest.fixture(scope="module")
def entries() -> list[dict[str, Any]]:
    return list(reasoning_gym.create_dataset("basic_arithmetic", size=3, seed=7))


def samples_of(entries: list[dict[str, Any]], task: str = "basic_arithmetic") -> list[Sample]:
    return [
        Sample(f"rg{i}", e["question"], e["answer"], {"entry": e, "task": task})
        for i, e in enumerate(entries)
    ]


def test_it_scores_with_the_task_scorer(entries: list[dict[str, Any]]) -> None:
    samples = samples_of(entries)
    completions = [entries[0]["answer"], "12345678", f"  {entries[2]['answer']}\n"]
    results = build_verifier("reasoning_gym", {})(completions, samples)
    assert [r.reward for r in results] == [1.0, 0.0, 1.0]
    assert [r.correct for r in results] == [True, False, True]
    assert results[0].detail["task"] == "basic_arithmetic"
    assert results[0].detail["expected"] == entries[0]["answer"]


def test_it_extracts_reasoning_gym_answer_tags(entries: list[dict[str, Any]]) -> None:
    samples = samples_of(entries[:2])
    completions = [f"<think>...</think><answer>{entries[0]['answer']}</answer>", entries[1]["answer"]]
    results = build_verifier("reasoning_gym", {"extract": "answer_tag"})(completions, samples)
    assert [r.reward for r in results] == [1.0, 0.0]
    assert results[1].detail["extracted"] is None


def test_it_scores_by_the_entry_source_dataset_over_the_task_name(entries: list[dict[str, Any]]) -> None:
    (sample,) = samples_of(entries[:1], task="composite")
    (result,) = build_verifier("reasoning_gym", {})([entries[0]["answer"]], [sample])
    assert result.reward == 1.0


def test_it_reports_a_sample_without_an_entry() -> None:
    (result,) = build_verifier("reasoning_gym", {})(["1"], [Sample("x", "q", "1")])
    assert result.reward == 0.0
    assert "meta['entry']" in result.detail["error"]


def test_it_reports_an_unknown_task() -> None:
    sample = Sample(
        "x", "q", "1", {"entry": {"question": "q", "answer": "1", "metadata": {}}, "task": "no_such_task"}
    )
    (result,) = build_verifier("reasoning_gym", {})(["1"], [sample])
    assert result.reward == 0.0
    assert "no_such_task" in result.detail["error"]


def test_it_refuses_a_threshold_above_one() -> None:
    with pytest.raises(VerifierError, match="correct_threshold"):
        build_verifier("reasoning_gym", {"correct_threshold": 1.5})


def test_it_builds_the_scorer_with_the_task_config_the_entries_came_from() -> None:
    # decimal_arithmetic's scorer rounds to the config's max_num_decimal_places.
    config = {"min_num_decimal_places": 1, "max_num_decimal_places": 1}
    entry = next(iter(reasoning_gym.create_dataset("decimal_arithmetic", size=1, seed=3, **config)))
    meta = {"entry": entry, "task": "decimal_arithmetic", "task_config": config}
    sample = Sample("d0", entry["question"], entry["answer"], meta)
    (result,) = build_verifier("reasoning_gym", {})([entry["answer"]], [sample])
    assert result.reward == 1.0
