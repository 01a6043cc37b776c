"""GRPO with the vLLM engine (vLLM's CPU build, through a rollout server the run starts) learns two-digit
addition on the tiny model, synchronously and asynchronously (training.max_off_policy_steps 1), as the hf
engine does in test_learning.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.test_learning import Rewards, assert_learned
from trainer.config import config_from_dict
from trainer.presets import preset
from trainer.step.loop import train


class Metrics(Rewards):
    def __init__(self) -> None:
        super().__init__()
        self.kl: list[float] = []
        self.staleness: list[float] = []

    def on_step(self, report) -> None:  # type: ignore[no-untyped-def]
        super().on_step(report)
        self.kl.append(report.metrics["async/sampler_trainer_kl"])
        self.staleness.append(report.metrics.get("async/staleness", 0.0))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("max_off_policy_steps", [0, 1], ids=["sync", "async"])
def test_grpo_with_the_vllm_engine_raises_reward_and_greedy_accuracy(
    warm_model_dir: Path, tmp_path: Path, max_off_policy_steps: int
) -> None:
    data = preset("addition")
    data["model"]["name_or_path"] = str(warm_model_dir)
    data["rollout"].update(
        {"engine": "vllm", "vllm_mode": "server", "vllm_max_model_len": 128, "vllm_kv_cache_gb": 0.25}
    )
    data["training"].update({"max_steps": 160, "max_off_policy_steps": max_off_policy_steps})
    data["checkpoint"] = {"output_dir": str(tmp_path), "save_steps": 0}
    seen = Metrics()
    train(config_from_dict(data), sink=seen, log=lambda m: None)

    assert_learned(seen.values, warm_model_dir, tmp_path)
    if max_off_policy_steps == 0:  # weights pushed after every step: vLLM samples what the policy would
        assert max(seen.kl) < 1e-4
    else:  # one update behind from step 2 on, and the importance weights saw it
        assert seen.staleness[0] == 0 and set(seen.staleness[1:]) == {1}
        assert max(seen.kl[1:]) > 0
