"""A batch of pathological answers is judged in parallel, each under its own timeout, within a batch timeout.

The pool used to run one worker on a 2-core machine (half the CPUs), so 8 answers like ``9^9^9^9`` took
8 x 5 s one after another, and the batch timeout was off by default.
"""

import time

import pytest

from trainer.errors import VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier
from trainer.verifiers.timeout_pool import TimeoutPool

TOWERS = ["9^9^9^9", "8^8^8^8", r"\boxed{9^{9^{9^{9}}}}"]


def test_hanging_calls_run_side_by_side_when_the_batch_asks_for_more_workers() -> None:
    with TimeoutPool(max_workers=1) as pool:
        started = time.monotonic()
        outcomes = pool.run(time.sleep, [(60,)] * 6, timeout_s=1, max_workers=6)
        wall = time.monotonic() - started
    assert [o.status for o in outcomes] == ["timeout"] * 6
    assert wall < 4.5  # one after another: at least 6 s


def test_the_math_verifier_has_a_batch_timeout_and_several_workers_by_default() -> None:
    params = build_verifier("math", {}).params  # type: ignore[attr-defined]
    assert (params.timeout_s, params.batch_timeout_s, params.workers) == (5.0, 30.0, 8)


def test_each_pathological_answer_times_out_with_an_error_saying_so() -> None:
    verifier = build_verifier("math", {"timeout_s": 1, "workers": 3})
    results = verifier([*TOWERS, r"\boxed{3}"], [Sample(f"s{i}", "q", "3") for i in range(4)])
    assert [(r.reward, r.correct) for r in results] == [(0.0, False)] * 3 + [(1.0, True)]
    assert [r.detail.get("error") for r in results[:3]] == ["timed out after 1 s"] * 3


def test_the_batch_timeout_stops_what_is_left_of_the_batch() -> None:
    verifier = build_verifier("math", {"timeout_s": 1, "batch_timeout_s": 1.5, "workers": 1})
    started = time.monotonic()
    results = verifier(TOWERS, [Sample(f"s{i}", "q", "3") for i in range(3)])
    assert time.monotonic() - started < 8  # not 3 x 1 s plus restarts
    assert results[0].detail["error"] == "timed out after 1 s"
    assert results[-1].detail["error"].startswith("batch timed out after 1.5 s")


def test_a_batch_timeout_shorter_than_the_per_answer_timeout_is_refused() -> None:
    with pytest.raises(VerifierError, match="batch_timeout_s"):
        build_verifier("math", {"timeout_s": 10, "batch_timeout_s": 5})


def test_the_worker_count_is_bounded() -> None:
    with pytest.raises(VerifierError, match="workers"):
        build_verifier("math", {"workers": 0})
