"""reasoning-gym tasks as Samples (trainer/data/reasoning_gym_tasks.py)."""

import json

import pytest
import reasoning_gym

from trainer.data import reasoning_gym_samples, reasoning_gym_task_names
from trainer.errors import DataError

TASKS = ["basic_arithmetic", "chain_sum", "countdown"]


@pytest.mark.parametrize("task", TASKS)
def test_a_task_loads_the_same_samples_for_the_same_seed(task: str):
    assert reasoning_gym_samples(task, size=4, seed=7) == reasoning_gym_samples(task, size=4, seed=7)


@pytest.mark.parametrize("task", TASKS)
def test_a_task_loads_other_samples_for_another_seed(task: str):
    first = [s.prompt for s in reasoning_gym_samples(task, size=4, seed=7)]
    assert first != [s.prompt for s in reasoning_gym_samples(task, size=4, seed=8)]


@pytest.mark.parametrize("task", TASKS)
def test_a_sample_holds_the_question_answer_and_entry(task: str):
    sample = reasoning_gym_samples(task, size=2, seed=1)[1]
    entry = reasoning_gym.create_dataset(task, size=2, seed=1)[1]
    assert sample.id == f"{task}-1"
    assert sample.prompt == entry["question"]
    assert sample.answer == str(entry["answer"])
    assert sample.meta["task"] == task
    assert sample.meta["entry"]["question"] == entry["question"]


@pytest.mark.parametrize("task", TASKS)
def test_the_stored_entry_survives_json_and_still_scores_its_own_answer(task: str):
    sample = reasoning_gym_samples(task, size=2, seed=3)[0]
    entry = json.loads(json.dumps(sample.meta["entry"]))
    score = reasoning_gym.get_score_answer_fn(task)(sample.answer, entry)
    assert score == 1.0


def test_task_config_reaches_the_task():
    samples = reasoning_gym_samples("chain_sum", size=5, seed=0, task_config={"min_terms": 2, "max_terms": 2})
    assert all(s.meta["entry"]["metadata"]["num_terms"] == 2 for s in samples)


def test_an_unknown_task_lists_valid_names():
    with pytest.raises(DataError) as err:
        reasoning_gym_samples("chain_summ", size=1, seed=0)
    message = str(err.value)
    assert "unknown reasoning-gym task 'chain_summ'" in message
    assert "did you mean chain_sum" in message
    assert "basic_arithmetic" in message


def test_an_unknown_task_config_key_is_named():
    with pytest.raises(
        DataError, match=r"key 'max_term', which reasoning-gym task 'chain_sum' does not know.*max_terms"
    ):
        reasoning_gym_samples("chain_sum", size=1, seed=0, task_config={"max_term": 3})


def test_a_bad_task_config_value_is_explained():
    with pytest.raises(DataError, match=r"rejected data\.task_config.*max_terms must be >= min_terms"):
        reasoning_gym_samples("chain_sum", size=1, seed=0, task_config={"min_terms": 5, "max_terms": 2})


@pytest.mark.parametrize(("key", "setting"), [("size", "data.size"), ("seed", "data.data_seed")])
def test_size_and_seed_are_refused_in_task_config(key: str, setting: str):
    with pytest.raises(DataError, match=f"must not set '{key}': set {setting}"):
        reasoning_gym_samples("chain_sum", size=1, seed=0, task_config={key: 3})


def test_the_task_names_include_the_tested_tasks():
    assert set(TASKS) <= set(reasoning_gym_task_names())
