"""Per-problem results: bulk-stored once, packed tokens, read back as the engine's ProblemResults."""

from __future__ import annotations

import math

from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.webapp.benchmarks.helpers import problem_result
from trainer.evaluation.engine import ProblemResult
from webapp.benchmarks.models import Benchmark, EvalProblem, EvalRun, EvalSample
from webapp.benchmarks.results import eval_record_problems
from webapp.benchmarks.selectors import eval_stored_problems, samples_with_tokens
from webapp.benchmarks.services import eval_launch
from webapp.experiments.models import Experiment


def launch(benchmark: Benchmark, experiment: Experiment, alice: User) -> EvalRun:
    return eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0]


def test_a_batch_of_problems_is_stored_with_a_constant_number_of_queries(
    benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    row = launch(benchmark, experiment, alice)
    small = [problem_result("row-1")]
    big = [problem_result(f"row-{i}", index=i) for i in range(2, 12)]
    with CaptureQueriesContext(connection) as one:
        eval_record_problems(eval_run_id=row.pk, problems=small)
    with CaptureQueriesContext(connection) as ten:
        eval_record_problems(eval_run_id=row.pk, problems=big)
    assert len(ten) == len(one)
    row.refresh_from_db()
    assert row.problems_done == 11 and EvalSample.objects.filter(problem__eval_run=row).count() == 44


def test_a_problem_stored_twice_is_kept_once(
    benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    row = launch(benchmark, experiment, alice)
    assert eval_record_problems(eval_run_id=row.pk, problems=[problem_result("row-1")]) == 1
    assert (
        eval_record_problems(
            eval_run_id=row.pk, problems=[problem_result("row-1"), problem_result("row-2", index=1)]
        )
        == 1
    )
    row.refresh_from_db()
    assert row.problems_done == 2 and EvalProblem.objects.filter(eval_run=row).count() == 2


def test_counts_and_token_arrays_survive_the_round_trip(
    benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    row = launch(benchmark, experiment, alice)
    original = problem_result("row-1", correct=[False, True, True, True])
    eval_record_problems(eval_run_id=row.pk, problems=[original])
    problem = EvalProblem.objects.get(eval_run=row)
    assert (problem.n, problem.c) == (4, 3)
    samples = samples_with_tokens(problem=problem)
    assert samples[1]["token_ids"] == [11, 1] and samples[1]["tokens"] == [" 4", "<eos>"]
    assert math.isclose(samples[1]["channels"]["logprob"][0], -0.5, rel_tol=1e-6)
    assert samples[0]["text"] == " <b>5</b>"  # stored as written; pages insert it as text


def test_stored_problems_rebuild_the_engines_results_for_resuming(
    benchmark: Benchmark, experiment: Experiment, alice: User, no_enqueue: None
) -> None:
    row = launch(benchmark, experiment, alice)
    original = problem_result("row-2", index=1, correct=[True, True, False, False])
    eval_record_problems(eval_run_id=row.pk, problems=[original])
    rebuilt = [ProblemResult.from_dict(d) for d in eval_stored_problems(eval_run_id=row.pk)]
    assert len(rebuilt) == 1
    got = rebuilt[0]
    assert (got.problem_id, got.index, got.seed, got.n, got.c, got.answer) == ("row-2", 1, 0, 4, 2, "4")
    assert [s.token_ids for s in got.samples] == [s.token_ids for s in original.samples]
    assert [s.extracted_answer for s in got.samples] == ["4", "4", "5", "5"]
    assert all(
        math.isclose(a, b, rel_tol=1e-6)
        for a, b in zip(got.samples[3].logprobs, original.samples[3].logprobs, strict=True)
    )
