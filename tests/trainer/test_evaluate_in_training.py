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
def test_the_policy_is_evaluated_every_eval_every_steps_without_changing_training(
    random_model_dir: Path, tmp_path: Path
):
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


GREEDY_ADDITION = {
    "name": "addition-greedy", "data": {"source": "demo", "size": 3, "data_seed": 1},
    "verifiers": [{"name": "exact", "params": {"extract": "first_line"}}], "n_samples": 1, "greedy": True,
    "max_tokens": 4,
}  # fmt: skip
GREEDY_KEY = "eval/addition-greedy/accuracy (greedy)"


@pytest.mark.slow  # three training steps and three evaluations of the tiny model
def test_eval_at_start_reports_step_0_and_eval_at_end_evaluates_the_last_step(
    random_model_dir: Path, tmp_path: Path
):
    evaluation = {
        "eval_every": 2,
        "eval_at_start": True,
        "eval_at_end": True,
        "benchmarks": [GREEDY_ADDITION],
    }
    config = tiny_config(random_model_dir, tmp_path / "run", evaluation=evaluation, training={"max_steps": 3})
    sink = StepMetrics()
    train(config, sink=sink, log=lambda msg: None)
    assert sorted(sink.metrics) == [0, 1, 2, 3]
    assert [step for step, m in sorted(sink.metrics.items()) if GREEDY_KEY in m] == [0, 2, 3]
    assert not any(
        k.startswith(("rollout/", "actor/")) for k in sink.metrics[0]
    )  # before training: eval only
    assert 0.0 <= sink.metrics[0][GREEDY_KEY] <= 1.0


@pytest.mark.slow  # one training step
def test_a_resumed_run_does_not_evaluate_step_0_again(random_model_dir: Path, tmp_path: Path):
    evaluation = {"eval_at_start": True, "benchmarks": [GREEDY_ADDITION]}
    first = tiny_config(
        random_model_dir,
        tmp_path / "run",
        evaluation=evaluation,
        training={"max_steps": 1},
        checkpoint={"save_steps": 1},
    )
    train(first, sink=StepMetrics(), log=lambda msg: None)
    resumed = StepMetrics()
    longer = tiny_config(random_model_dir, tmp_path / "run", evaluation=evaluation, training={"max_steps": 2})
    train(longer, sink=resumed, resume_from=tmp_path / "run", log=lambda msg: None)
    assert sorted(resumed.metrics) == [2]


def test_the_demo_evaluates_greedily_on_500_held_out_problems_at_start_every_50_steps_and_at_the_end():
    from trainer.config import config_from_dict
    from trainer.evaluation.engine import PeriodicEvaluation, load_benchmark_samples
    from trainer.models.tiny_recipes import chain_held_out
    from trainer.presets import preset

    config = config_from_dict(preset("demo"))
    periodic = PeriodicEvaluation(config.evaluation)
    max_steps = config.training.max_steps
    assert periodic.at_start and [s for s in range(1, max_steps + 1) if periodic.due(s, max_steps)] == [
        50,
        100,
        150,
        200,
    ]
    (bench,) = periodic.benchmarks
    assert bench.greedy and bench.name == "chain_arithmetic"
    # The problems benchmarks/chain_demo.py and the README's figures are measured on.
    problems = [(s.prompt, s.answer) for s in load_benchmark_samples(bench)]
    assert problems == chain_held_out(500)
