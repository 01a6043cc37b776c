"""The tiny warm-started model really learns 2-digit addition with GRPO on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.config import config_from_dict
from trainer.models.checkpoint import latest_checkpoint
from trainer.models.tiny_model import greedy_addition_accuracy
from trainer.presets import preset
from trainer.sinks import StepReport
from trainer.step.loop import train


class Rewards:
    def __init__(self) -> None:
        self.values: list[float] = []

    def on_start(self, info: object) -> None: ...
    def on_step(self, report: StepReport) -> None:
        self.values.append(report.metrics["rollout/reward_mean"])

    def on_checkpoint(self, step: int, path: str) -> None: ...
    def on_end(self, status: str, final_metrics: dict[str, float]) -> None: ...
    def on_error(self, message: str, traceback_text: str) -> None: ...


def greedy(model_dir: Path) -> float:
    return greedy_addition_accuracy(
        AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir), n=500
    )


@pytest.mark.slow
@pytest.mark.timeout(900)  # builds the tiny model first if `make test` did not
def test_grpo_raises_the_reward_on_the_demo_task(warm_model_dir: Path, tmp_path: Path) -> None:
    data = preset("addition")
    data["model"]["name_or_path"] = str(warm_model_dir)
    data["training"]["max_steps"] = 160
    data["checkpoint"] = {"output_dir": str(tmp_path), "save_steps": 0}
    rewards = Rewards()
    train(config_from_dict(data), sink=rewards, log=lambda m: None)

    assert_learned(rewards.values, warm_model_dir, tmp_path)


def assert_learned(rewards: list[float], start: Path, run_dir: Path) -> None:
    """The sampled reward rose (last 30 steps over the first 30) and greedy accuracy gained 0.05 or more."""
    first, last = sum(rewards[:30]) / 30, sum(rewards[-30:]) / 30
    assert last > first, f"sampled reward did not rise: first 30 steps {first:.3f}, last 30 {last:.3f}"
    before, after = greedy(start), greedy(latest_checkpoint(run_dir))  # type: ignore[arg-type]
    assert after >= before + 0.05, f"greedy accuracy on 500 problems: {before:.3f} -> {after:.3f}"
