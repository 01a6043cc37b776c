"""Bench verdicts out of the calling process under a hard budget (trainer/verifiers/isolated.py).

The slow verdict is real: with extract 'regex' the answer is the pattern's *last* match, so ``a.*z|a`` on
100,000 ``a``s is 100,000 matches each reading to the end of the text, about 8 s even in RE2 (quadratic,
not exponential). In the calling thread that would block it; here it costs the budget and no more.
"""

from __future__ import annotations

import importlib
import inspect
import threading
import time
from collections.abc import Iterator

import pytest

from trainer.errors import ConfigError, VerifierError
from trainer.verifiers import VERIFIERS
from trainer.verifiers.isolated import SELF_ISOLATING, IsolatedScorer

SLOW = {"extract": "regex", "pattern": "a.*z|a"}
SLOW_TEXT = "a" * 100_000


@pytest.fixture(scope="module")
def scorer() -> Iterator[IsolatedScorer]:
    scorer = IsolatedScorer()
    yield scorer
    scorer.close()


def test_a_verdict_past_its_budget_comes_back_as_a_timeout_verdict(scorer: IsolatedScorer) -> None:
    scorer.score("exact", SLOW, [("warm", "warm")], budget_s=5)  # worker start-up is not part of the budget
    started = time.monotonic()
    (result,) = scorer.score("exact", SLOW, [(SLOW_TEXT, "a")], budget_s=1)
    assert time.monotonic() - started < 4
    assert not result.correct and result.reward == 0.0
    assert result.detail["error"].startswith("verifier exceeded its 1 s budget and was stopped")


def test_the_bench_keeps_working_after_a_timeout(scorer: IsolatedScorer) -> None:
    scorer.score("exact", SLOW, [(SLOW_TEXT, "a")], budget_s=0.5)
    (result,) = scorer.score("exact", {"extract": "first_line"}, [("paris\nmore", "paris")], budget_s=5)
    assert result.correct and result.detail["extracted"] == "paris"


def test_only_the_slow_case_times_out_and_the_others_keep_their_verdicts(scorer: IsolatedScorer) -> None:
    pairs = [("a", "a"), (SLOW_TEXT, "a"), ("b", "a")]
    results = scorer.score("exact", SLOW, pairs, budget_s=1, batch_budget_s=10)
    assert [r.correct for r in results] == [True, False, False]
    assert "error" not in results[0].detail and "budget" in results[1].detail["error"]
    assert results[2].detail["extracted"] is None and "error" not in results[2].detail


def test_the_batch_budget_bounds_many_slow_cases_together(scorer: IsolatedScorer) -> None:
    started = time.monotonic()
    results = scorer.score("exact", SLOW, [(SLOW_TEXT, "a")] * 4, budget_s=1.5, batch_budget_s=2)
    assert time.monotonic() - started < 5
    assert all("budget" in r.detail["error"] for r in results)
    assert any("2 s budget together" in r.detail["error"] for r in results)


def test_a_quick_check_is_answered_while_a_slow_one_runs(scorer: IsolatedScorer) -> None:
    scorer.score("exact", {}, [("x", "x")], budget_s=5)  # both pools started
    slow = threading.Thread(target=lambda: scorer.score("exact", SLOW, [(SLOW_TEXT, "a")], budget_s=3))
    slow.start()
    time.sleep(0.3)
    started = time.monotonic()
    (result,) = scorer.score("exact", {}, [("x", "x")], budget_s=5)
    elapsed = time.monotonic() - started
    slow.join()
    assert result.correct and elapsed < 2


def test_bad_params_and_unknown_names_fail_in_the_caller(scorer: IsolatedScorer) -> None:
    with pytest.raises(VerifierError, match="lookahead"):
        scorer.score("regex_format", {"pattern": "(?=x)"}, [("x", None)])
    with pytest.raises(ConfigError, match="unknown verifier 'nope'"):
        scorer.score("nope", {}, [("x", None)])


def test_a_verifier_with_its_own_worker_processes_is_scored_in_the_caller(scorer: IsolatedScorer) -> None:
    (result,) = scorer.score("math", {"extract": "boxed"}, [("so \\boxed{\\frac{1}{2}}", "0.5")], budget_s=5)
    assert result.correct, result.detail


def test_every_verifier_that_starts_worker_processes_is_listed_as_self_isolating() -> None:
    """A pool worker is a daemon and may not start processes: such a verifier must not be sent to one."""
    for name in VERIFIERS:
        module = importlib.import_module(VERIFIERS.get(name).__module__)
        if "run_with_timeout" in inspect.getsource(module):
            assert name in SELF_ISOLATING, f"{name} starts worker processes: add it to SELF_ISOLATING"
