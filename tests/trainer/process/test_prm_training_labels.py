"""The rollout label sources of PRM training on real tiny:chain-teacher samples: oracle step labels follow the
verifier's first wrong step, and Monte-Carlo labels are the share of right continuations, trained soft or thresholded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainer.data.chain_arithmetic import chain_arithmetic_samples
from trainer.process.monte_carlo import MonteCarloParams
from trainer.process.prm_config import PRMTrainingConfig
from trainer.process.prm_training import (
    Rollouts,
    monte_carlo_labels,
    oracle_labels,
    sample_rollouts,
    train_prm,
)
from trainer.verifiers.chain_arithmetic import ChainArithmeticParams, ChainArithmeticVerifier


@pytest.fixture(scope="module")
def engine() -> object:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.models.tiny_model import ensure_tiny_model
    from trainer.rollout.hf_engine import HFRolloutEngine

    path = ensure_tiny_model("tiny:chain-teacher", log=lambda m: None)
    return HFRolloutEngine(AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path))


@pytest.fixture(scope="module")
def rollouts(engine: object) -> Rollouts:
    problems = chain_arithmetic_samples(6, seed=3, level="easy")
    return sample_rollouts(
        engine, problems, 2, max_new_tokens=48, temperature=0.7, generator=torch.Generator().manual_seed(0)
    )


def test_oracle_labels_are_right_until_the_verifiers_first_wrong_step(rollouts: Rollouts) -> None:
    examples = oracle_labels(rollouts)
    assert len(examples) == 12 and rollouts.generated_tokens > 0
    verdicts = ChainArithmeticVerifier(ChainArithmeticParams())(rollouts.texts, rollouts.samples)
    for example, verdict, text in zip(examples, verdicts, rollouts.texts, strict=True):
        assert "".join(example.steps) == text  # the steps cover the completion
        labels = example.labels
        assert set(labels) <= {0.0, 1.0} and labels == sorted(labels, reverse=True)
        if not verdict.correct:  # a wrong answer has a wrong step (a right one may still follow a slip)
            assert labels[-1] == 0.0
        if labels[-1] == 1.0:
            assert verdict.correct
    assert any(1.0 in e.labels for e in examples) and any(0.0 in e.labels for e in examples)


def test_monte_carlo_labels_train_soft_or_thresholded(
    rollouts: Rollouts, engine: object, tmp_path: Path
) -> None:
    verifier = ChainArithmeticVerifier(ChainArithmeticParams())
    examples, tokens = monte_carlo_labels(
        rollouts, engine, verifier, MonteCarloParams(k=2), max_new_tokens=48, temperature=0.7,
        generator=torch.Generator().manual_seed(1), chunk=5,
    )  # fmt: skip
    assert len(examples) == 12 and tokens > 0
    values = {v for e in examples for v in e.labels}
    assert values <= {0.0, 0.5, 1.0} and 0.5 in values
    verdicts = verifier(rollouts.texts, rollouts.samples)
    assert [e.labels[-1] for e in examples] == [1.0 if v.correct else 0.0 for v in verdicts]
    base = {"base_model": "tiny:chain", "max_steps": 2, "batch_size": 6, "max_length": 128, "device": "cpu"}
    soft = train_prm(PRMTrainingConfig(**base, output_dir=str(tmp_path / "s"), soft_labels=True), examples)
    hard = train_prm(PRMTrainingConfig(**base, output_dir=str(tmp_path / "h"), label_threshold=0.5), examples)
    assert soft.steps == hard.steps == 2 and soft.final_loss != hard.final_loss
