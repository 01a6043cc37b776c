"""Evaluating PRMs: ProcessBench's first-error F1 on hand-computed cases, ECE on constructed bins, PRM Best-of-N
with min-aggregation against brute-force enumeration, absent step scores, and the chain oracle scoring real
tiny:chain scratchpads against itself."""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from trainer.process.evaluation import (
    StepScoredSample,
    first_error_evaluation,
    oracle_step_labels,
    predicted_first_wrong,
    prm_best_of_n,
    reference_first_wrong,
    solution_score,
    step_calibration,
    step_example_inputs,
)
from trainer.process.scorers import first_error_f1

NAN = math.nan


def test_first_error_f1_hand_computed() -> None:
    scores = [
        [1.0, 0.2, 0.9],  # blames step 1; reference 1 -> hit
        [0.1, 1.0, 1.0],  # blames step 0; reference 2 -> early
        [1.0, 1.0, 1.0],  # blames nothing; reference 1 -> late (missed)
        [1.0, 1.0],  # correct, nothing blamed -> hit
        [0.9, 0.4],  # correct, blames step 1 -> early
        [0.8, 0.7],  # correct, nothing blamed -> hit
    ]
    refs: list[int | None] = [1, 2, 1, None, None, None]
    report = first_error_evaluation(scores, refs, resamples=0)
    # erroneous accuracy 1/3, correct accuracy 2/3, F1 = 2 * (1/3) * (2/3) / (1/3 + 2/3) = 4/9
    assert report.accuracy_erroneous == pytest.approx(1 / 3)
    assert report.accuracy_correct == pytest.approx(2 / 3)
    assert report.f1 == pytest.approx(4 / 9)
    assert (report.erroneous, report.correct, report.early, report.late) == (3, 3, 2, 1)
    assert report.f1_ci == (report.f1, report.f1)
    # the same number the training metric reports
    pairs = [(predicted_first_wrong(s), r) for s, r in zip(scores, refs, strict=True)]
    assert report.f1 == pytest.approx(first_error_f1(pairs))
    # a stricter threshold names step 2 of the first row as well as earlier ones: no change to the first hit
    strict = first_error_evaluation(scores, refs, threshold=0.95, resamples=0)
    # row0 blames 1 (hit), row1 0, row2 none, row3 none (hit), row4 0, row5 0 -> 1/3 and 1/3 -> F1 1/3
    assert strict.f1 == pytest.approx(1 / 3)


def test_first_error_f1_edges_and_bootstrap() -> None:
    assert first_error_evaluation([[0.0]], [0], resamples=0).f1 == 1.0  # only erroneous solutions
    nothing_right = first_error_evaluation([[0.0], [1.0]], [None, 0], resamples=0)
    assert nothing_right.f1 == 0.0 and nothing_right.accuracy_correct == 0.0
    empty = first_error_evaluation([], [], resamples=100)
    assert empty.f1 is None and empty.f1_ci is None
    scores = [[1.0, 0.0]] * 10 + [[0.0, 1.0]] * 10 + [[1.0, 1.0]] * 15 + [[0.0, 1.0]] * 5
    refs: list[int | None] = [1] * 20 + [None] * 20
    report = first_error_evaluation(scores, refs, resamples=2000, seed=3)
    assert report.f1 == pytest.approx(2 * 0.5 * 0.75 / 1.25)
    assert report.f1 is not None and report.f1_ci is not None
    low, high = report.f1_ci
    assert low < report.f1 < high and low > 0.3 and high < 0.85
    with pytest.raises(ValueError, match="references"):
        first_error_evaluation([[1.0]], [None, None])


def test_absent_step_scores_are_never_wrong() -> None:
    assert predicted_first_wrong([NAN, NAN]) is None
    assert predicted_first_wrong([NAN, 0.3, NAN]) == 1
    report = first_error_evaluation([[NAN, NAN], [NAN, 0.0]], [None, 1], resamples=0)
    assert report.f1 == 1.0  # the all-absent solution blames nothing, which is right here
    assert reference_first_wrong([1.0, NAN, 0.0]) == 2
    assert math.isnan(solution_score([NAN, NAN], "min")) and math.isnan(solution_score([0.5, NAN], "last"))
    assert solution_score([NAN, 0.5, 0.8], "min") == 0.5
    assert solution_score([NAN, 0.5, 0.8], "mean") == pytest.approx(0.65)
    assert solution_score([0.5, NAN, 0.8], "product") == pytest.approx(0.4)
    assert solution_score([0.5, NAN, 0.8], "last") == 0.8
    with pytest.raises(ValueError, match="aggregate"):
        solution_score([1.0], "max")
    calib = step_calibration([[NAN, 0.9], [0.2]], [[1.0, 1.0], [NAN]], bins=2)
    assert (calib.steps, calib.absent) == (1, 2)


def test_ece_on_constructed_bins() -> None:
    # bin [0, .25): scores 0.1, 0.1 labels 0, 1 -> acc .5, conf .1 ; bin [.75, 1]: 0.9, 0.9, 1.0, 1.0 labels 1,1,1,0
    scores = [[0.1, 0.1], [0.9, 0.9, 1.0, 1.0]]
    labels = [[0.0, 1.0], [1.0, 1.0, 1.0, 0.0]]
    report = step_calibration(scores, labels, bins=4)
    counts = [b.steps for b in report.bins]
    assert counts == [2, 0, 0, 4] and report.bins[1].mean_score is None
    assert report.bins[0].accuracy == 0.5 and report.bins[0].mean_score == pytest.approx(0.1)
    assert report.bins[3].accuracy == 0.75 and report.bins[3].mean_score == pytest.approx(0.95)
    assert report.ece == pytest.approx(2 / 6 * 0.4 + 4 / 6 * 0.2)
    perfect = step_calibration([[0.0, 1.0, 1.0]], [[0.0, 1.0, 1.0]], bins=10)
    assert perfect.ece == 0.0 and perfect.bins[-1].steps == 2  # 1.0 falls in the last, closed bin
    assert step_calibration([], [], bins=3).ece is None
    assert oracle_step_labels(None, 3) == [1.0, 1.0, 1.0]
    assert oracle_step_labels(1, 3) == [1.0, 0.0, 0.0]
    skipped = oracle_step_labels(1, 3, "skip")
    assert skipped[:2] == [1.0, 0.0] and math.isnan(skipped[2])


def _brute_force(groups: list[list[StepScoredSample]], n: int) -> float:
    """Every n-subset of every problem, the top by min step score, ties split evenly."""
    total = 0.0
    for g in groups:
        values = []
        for subset in combinations(range(len(g)), n):
            keyed = [(solution_score(g[i].step_scores, "min"), i) for i in subset]
            present = [k for k in keyed if not math.isnan(k[0])]
            pool = present or keyed  # all absent: any of them, at random
            best = max(k[0] for k in pool) if present else None
            tied = [i for v, i in pool if best is None or v == best]
            values.append(sum(g[i].correct for i in tied) / len(tied))
        total += sum(values) / len(values)
    return total / len(groups)


def test_prm_best_of_n_min_aggregation_matches_brute_force() -> None:
    groups = [
        [
            StepScoredSample("1", True, [0.9, 0.8]),
            StepScoredSample("2", False, [0.95, 0.3]),
            StepScoredSample("1", True, [0.6, NAN]),
            StepScoredSample("3", False, [0.99, 0.99]),
        ],
        [
            StepScoredSample("5", False, [0.2]),
            StepScoredSample("6", True, [0.5, 0.7, 0.9]),
            StepScoredSample("5", False, [NAN, NAN]),
            StepScoredSample("6", True, [0.5, 0.5]),  # ties with the one above under min
        ],
    ]
    curve = prm_best_of_n(groups, "min", [1, 2, 3, 4], resamples=0)
    for n in (1, 2, 3, 4):
        assert curve.at(n) == pytest.approx(_brute_force(groups, n)), n
    assert curve.extra["aggregate"] == "min" and curve.absent == 1
    assert curve.oracle[-1] == 1.0 and curve.random[0] == pytest.approx(0.5)
    # last-step aggregation ranks differently: sample 1 of problem 0 scores 0.3, sample 2 absent (last)
    last = prm_best_of_n(groups, "last", [4], resamples=0)
    assert last.at(4) == pytest.approx((0.0 + 1.0) / 2)  # problem 0 picks "3" (0.99), problem 1 picks 0.9


def test_step_example_inputs_keep_the_files_steps(chain_tok: Any) -> None:
    from trainer.process.step_labels import StepExample

    examples = [StepExample("2+3*4=", ["3*4=12", "2+12=15", "#### 15"], [1.0, 0.0, 0.0])]
    texts, ids, spans, samples, refs = step_example_inputs(examples, chain_tok)
    assert refs == [1] and samples[0].prompt == "2+3*4="
    assert texts == ["3*4=12\n2+12=15\n#### 15\n"]
    assert len(spans[0]) == 3 and spans[0][-1][1] == len(ids[0]) and spans[0][0][0] == 0
    assert chain_tok.decode(ids[0][spans[0][1][0] : spans[0][1][1]]) == "2+12=15\n"


@pytest.fixture(scope="module")
def chain_dir() -> Path:
    from trainer.models.tiny_model import ensure_tiny_model

    return ensure_tiny_model("tiny:chain", log=lambda m: None)


@pytest.fixture(scope="module")
def chain_tok(chain_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(chain_dir)


def test_oracle_scorer_scores_f1_one_on_real_chain_scratchpads(chain_dir: Path) -> None:
    from trainer.evaluation.engine import evaluate, load_benchmark_samples, load_policy
    from trainer.evaluation.suite import resolve_benchmark
    from trainer.process.evaluation import score_problems
    from trainer.verifiers.chain_arithmetic import ChainArithmeticParams

    config = resolve_benchmark(
        "builtin:chain_arithmetic", n_samples=4, greedy=False, max_problems=12, seed=0, bootstrap_samples=0
    )
    policy, tok = load_policy(str(chain_dir), "cpu")
    problems = evaluate(config, (policy, tok)).problems
    by_id = {s.id: s for s in load_benchmark_samples(config)}
    calls: list[tuple[int, int]] = []
    scored = score_problems(
        problems,
        [by_id[p.problem_id] for p in problems],
        scorer="oracle_chain",
        scorer_params={},
        tokenizer=tok,
        chain_params=ChainArithmeticParams(),
        problems_per_batch=5,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(5, 12), (10, 12), (12, 12)]
    assert len(scored.scores) == 48 and all(scored.known)
    assert any(len(row) > 2 for row in scored.spans)  # real multi-step scratchpads, not only bare answers
    report = first_error_evaluation(scored.scores, scored.references, resamples=200)
    assert report.f1 == 1.0 and report.f1_ci == (1.0, 1.0) and report.erroneous > 0
    labels = [oracle_step_labels(r, len(s)) for r, s in zip(scored.references, scored.spans, strict=True)]
    assert step_calibration(scored.scores, labels).ece == 0.0
    stopped = score_problems(
        problems, [by_id[p.problem_id] for p in problems], scorer="oracle_chain", scorer_params={},
        tokenizer=tok, chain_params=ChainArithmeticParams(), should_stop=lambda: True,
    )  # fmt: skip
    assert stopped.status == "cancelled" and stopped.scores == []
