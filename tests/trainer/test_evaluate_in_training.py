"""Periodic evaluation inside train(): eval/<benchmark>/<metric> lands in the step's metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.loop_helpers import tiny_config
from trainer.sinks import NullSink, StepReport
from trainer.step.loop import train


class StepMetrics(NullSink):
    def __init__(self) -> None:
        self.metrics: dict[int, dict[str, float]] = {}

    def on_step(self, report: StepReport) -> None:
        self.metrics[report.step] = report.metrics


@pytest.mark.slow  # two training steps and one evaluation of the tiny model
def test_the_policy_is_evaluated_every_eval_every_steps_without_changing_training(random_model_dir: Path, tmp_path: Path):
    evaluation = {"eval_every": 2, "benchmarks": ["builtin:addition"], "n_samples": 2, "max_problems": 3}
    config = tiny_config(random_model_dir, tmp_path / "run", evaluation=evaluation)
    sink = StepMetrics()
    train(config, sink=sink, log=lambda msg: None)
    assert not any(k.startswith("eval/") for k in sink.metrics[1])
    step2 = sink.metrics[2]
    for name in ("avg@2", "pass@1 (n=2)", "pass@2 (n=2)", "maj@2", "response_len_mean", "truncated"):
        assert f"eval/addition/{name}" in step2
    assert 0.0 <= step2["eval/addition/pass@2 (n=2)"] <= 1.0
    # Evaluation samples with its own generators: the training steps are those of a run without it.
    plain = StepMetrics()
    train(tiny_config(random_model_dir, tmp_path / "plain"), sink=plain, log=lambda msg: None)
    for key in ("rollout/reward_mean", "actor/pg_loss", "actor/grad_norm"):
        assert plain.metrics[2][key] == step2[key]
