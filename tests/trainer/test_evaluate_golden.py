"""A golden evaluation: a scripted engine (tests/trainer/eval_helpers.py) with hand-computed metrics.

The engine is scripted because this checks our metric pipeline (grouping, real verifiers, pass@k / maj@k /
avg@n, truncation, CIs, the sink), not a model; the tiny model runs in test_evaluate_resume.py and the CLI
tests.
"""

from __future__ import annotations

import pytest

from tests.trainer.eval_helpers import PROBLEMS, SCRIPT, ScriptedEngine
from trainer.evaluation.config import BenchmarkConfig
from trainer.evaluation.engine import EvalResult, ProblemResult, evaluate


def _config(**fields: object) -> BenchmarkConfig:
    base: dict[str, object] = {
        "name": "golden",
        "n_samples": 4,
        "pass_k": [1, 2, 4],
        "maj_k": [2, 4],
        "bootstrap_samples": 200,
    }
    return BenchmarkConfig.model_validate({**base, **fields})


def _run(**fields: object) -> EvalResult:
    return evaluate(_config(**fields), ScriptedEngine(SCRIPT), samples=PROBLEMS)


def test_the_metrics_match_hand_computed_values():
    metrics = _run().metrics
    assert metrics["avg@4"] == pytest.approx((3 / 4 + 2 / 4 + 0) / 3)
    assert metrics["pass@1 (n=4)"] == pytest.approx(5 / 12)
    # p1: n-c=1 < k=2 -> 1; p2: 1 - C(2,2)/C(4,2) = 5/6; p3: 0
    assert metrics["pass@2 (n=4)"] == pytest.approx((1 + 5 / 6 + 0) / 3)
    assert metrics["pass@4 (n=4)"] == pytest.approx(2 / 3)
    assert metrics["maj@4"] == pytest.approx(1 / 3)  # p1 right; p2 tie -> "5"; p3 "x"
    assert metrics["maj@2"] == pytest.approx(1 / 3)  # p1 ["2","2"]; p2 ["5","4"] -> "5"; p3 ["x","7"] -> "x"
    # tokens: the answer's characters + EOS, except the truncated "8" (no EOS)
    assert metrics["response_len_mean"] == pytest.approx((8 + 9 + 7) / 12)
    assert metrics["truncated"] == 1.0


def test_results_are_kept_per_problem_and_sample():
    problems = _run().problems
    assert [(p.problem_id, p.n, p.c) for p in problems] == [("p1", 4, 3), ("p2", 4, 2), ("p3", 4, 0)]
    sample = problems[1].samples[2]
    assert (sample.index, sample.text, sample.extracted_answer, sample.correct) == (2, "5.", "5", False)
    assert sample.token_ids == [ord("5"), ord("."), 1]
    assert sample.tokens == [str(ord("5")), str(ord(".")), "1"]  # no tokenizer: ids as text
    assert sample.logprobs == [-0.5, -0.5, -0.5]
    assert problems[2].samples[2].finish_reason == "length"
    assert set(sample.detail) == {"exact"} and sample.detail["exact"]["reason"] == "mismatch"


def test_metric_names_carry_their_parameters_and_get_intervals():
    result = _run()
    assert set(result.ci) == set(result.metrics) - {"truncated"}
    low, high = result.ci["pass@1 (n=4)"]
    assert low <= result.metrics["pass@1 (n=4)"] <= high


def test_batching_does_not_change_the_results():
    one_problem_per_batch = _run(batch_size=4).metrics
    assert one_problem_per_batch == _run(batch_size=256).metrics


def test_several_seeds_are_averaged_and_kept_apart():
    result = _run(num_seeds=2)
    assert [(p.problem_id, p.seed) for p in result.problems] == [
        ("p1", 0),
        ("p2", 0),
        ("p3", 0),
        ("p1", 1),
        ("p2", 1),
        ("p3", 1),
    ]
    assert result.metrics["pass@1 (n=4)"] == pytest.approx(5 / 12)


class RecordingSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def on_start(self, total_problems: int, done: int) -> None:
        self.events.append(("start", (total_problems, done)))

    def on_problem(self, result: ProblemResult) -> None:
        self.events.append(("problem", result.problem_id))

    def on_end(self, result: EvalResult) -> None:
        self.events.append(("end", result.status))


def test_the_sink_hears_every_problem_as_it_finishes():
    sink = RecordingSink()
    evaluate(_config(batch_size=4), ScriptedEngine(SCRIPT), samples=PROBLEMS, sink=sink)
    assert sink.events == [
        ("start", (3, 0)),
        ("problem", "p1"),
        ("problem", "p2"),
        ("problem", "p3"),
        ("end", "succeeded"),
    ]


def test_timings_split_generation_and_verification():
    timings = _run().timings
    assert timings["generated_samples"] == 12
    assert timings["generate_s"] >= 0 and timings["verify_s"] >= 0
    assert 0 <= timings["verify_frac"] <= 1


def test_a_problem_result_survives_a_json_round_trip():
    import json

    problem = _run().problems[0]
    assert ProblemResult.from_dict(json.loads(json.dumps(problem.to_dict()))) == problem
