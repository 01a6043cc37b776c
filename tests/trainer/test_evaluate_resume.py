"""An interrupted evaluation resumes without regenerating finished problems, and ends where an
uninterrupted one would have."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.eval_helpers import PROBLEMS, SCRIPT, ScriptedEngine
from trainer.errors import ConfigError
from trainer.evaluation.config import BenchmarkConfig
from trainer.evaluation.engine import ProblemResult, evaluate
from trainer.evaluation.suite import resolve_benchmark


class StopAfter:
    """should_stop that turns True once ``limit`` problems have reached the sink."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.finished: list[ProblemResult] = []

    def __call__(self) -> bool:
        return len(self.finished) >= self.limit

    def on_start(self, total_problems: int, done: int) -> None:
        pass

    def on_problem(self, result: ProblemResult) -> None:
        self.finished.append(result)

    def on_end(self, result: object) -> None:
        pass


def _config() -> BenchmarkConfig:
    return BenchmarkConfig(name="golden", n_samples=4, batch_size=4, bootstrap_samples=0)


def test_should_stop_ends_the_evaluation_as_cancelled_with_partial_results():
    stop = StopAfter(1)
    result = evaluate(_config(), ScriptedEngine(SCRIPT), samples=PROBLEMS, sink=stop, should_stop=stop)
    assert result.status == "cancelled"
    assert [p.problem_id for p in result.problems] == ["p1"]


def test_a_resumed_evaluation_skips_finished_problems_and_matches_an_uninterrupted_one():
    stop = StopAfter(2)
    evaluate(_config(), ScriptedEngine(SCRIPT), samples=PROBLEMS, sink=stop, should_stop=stop)
    engine = ScriptedEngine(SCRIPT)
    resumed = evaluate(_config(), engine, samples=PROBLEMS, done=stop.finished)
    assert engine.prompts_seen == ["3+3="] * 4  # only the unfinished problem was generated
    assert resumed.status == "succeeded"
    assert resumed.metrics == evaluate(_config(), ScriptedEngine(SCRIPT), samples=PROBLEMS).metrics


def test_done_results_with_another_n_are_refused():
    first = evaluate(_config(), ScriptedEngine(SCRIPT), samples=PROBLEMS).problems
    other_n = BenchmarkConfig(name="golden", n_samples=2, batch_size=4)
    with pytest.raises(ConfigError, match="has 4 samples but n_samples is 2"):
        evaluate(other_n, ScriptedEngine(SCRIPT), samples=PROBLEMS, done=first)


@pytest.mark.slow  # loads a (random) tiny model and samples three times: a few seconds
def test_resuming_on_the_tiny_model_reproduces_the_uninterrupted_samples(random_model_dir: Path):
    """Per-batch generators: the samples of a resumed run are the ones an uninterrupted run draws."""
    from trainer.evaluation.engine import load_policy

    policy = load_policy(str(random_model_dir), device="cpu")
    config = resolve_benchmark(
        "builtin:addition", n_samples=3, max_problems=4, batch_size=6, bootstrap_samples=0
    )
    whole = evaluate(config, policy, device="cpu")
    stop = StopAfter(2)
    evaluate(config, policy, device="cpu", sink=stop, should_stop=stop)
    resumed = evaluate(config, policy, device="cpu", done=stop.finished)
    assert [[s.text for s in p.samples] for p in resumed.problems] == [
        [s.text for s in p.samples] for p in whole.problems
    ]
    assert resumed.metrics == whole.metrics
