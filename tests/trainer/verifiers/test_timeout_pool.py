"""The process pool with a hard per-call timeout (trainer/verifiers/timeout_pool.py).

The called functions are stdlib ones (time.sleep, math.sqrt, os._exit) so the spawned workers need not
import this test module.
"""

import math
import operator
import os
import threading
import time
from collections.abc import Iterator

import pytest

from trainer.verifiers.timeout_pool import TimeoutPool, run_with_timeout


@pytest.fixture(scope="module")
def pool() -> Iterator[TimeoutPool]:
    with TimeoutPool(max_workers=2) as p:
        yield p


class _BreaksWhenLoaded:
    """Pickles fine, but unpickling in the worker raises ZeroDivisionError."""

    def __reduce__(self) -> tuple[object, tuple[int, int]]:
        return operator.truediv, (1, 0)


def test_it_returns_values_in_order(pool: TimeoutPool) -> None:
    outcomes = pool.run(math.sqrt, [(float(i * i),) for i in range(50)], timeout_s=5)
    assert [o.value for o in outcomes] == [float(i) for i in range(50)]
    assert all(o.status == "ok" for o in outcomes)


def test_it_returns_nothing_for_no_calls(pool: TimeoutPool) -> None:
    assert pool.run(math.sqrt, [], timeout_s=5) == []


def test_it_reports_an_exception_per_call(pool: TimeoutPool) -> None:
    good, bad = pool.run(math.sqrt, [(4.0,), (-1.0,)], timeout_s=5)
    assert (good.status, good.value) == ("ok", 2.0)
    assert (bad.status, bad.error) == ("error", "ValueError: math domain error")


def test_a_hanging_call_times_out_quickly_and_the_pool_still_works() -> None:
    started = time.monotonic()
    (outcome,) = run_with_timeout(time.sleep, [(60,)], timeout_s=1)
    assert time.monotonic() - started < 10
    assert (outcome.status, outcome.error) == ("timeout", "timed out after 1 s")
    assert [o.value for o in run_with_timeout(math.sqrt, [(9.0,)], timeout_s=5)] == [3.0]


def test_a_hang_only_costs_its_own_call(pool: TimeoutPool) -> None:
    outcomes = pool.run(time.sleep, [(0,), (60,), (0,), (0,)], timeout_s=1)
    assert [o.status for o in outcomes] == ["ok", "timeout", "ok", "ok"]


def test_it_kills_the_stuck_worker(pool: TimeoutPool) -> None:
    pool.run(math.sqrt, [(1.0,)] * 4, timeout_s=5)
    before = set(pool.worker_pids)
    pool.run(time.sleep, [(60,)], timeout_s=0.5)
    after = set(pool.worker_pids)
    assert len(before - after) == 1


def test_the_batch_timeout_bounds_the_whole_batch(pool: TimeoutPool) -> None:
    started = time.monotonic()
    outcomes = pool.run(time.sleep, [(60,)] * 5, timeout_s=30, batch_timeout_s=1)
    assert time.monotonic() - started < 10
    assert {o.status for o in outcomes} == {"timeout"}
    assert outcomes[0].error == "batch timed out after 1 s (the limit for the whole batch)"


def test_a_crashing_worker_fails_only_its_call(pool: TimeoutPool) -> None:
    outcomes = pool.run(os._exit, [(3,)], timeout_s=5)
    assert outcomes[0].status == "error"
    assert "exit code 3" in (outcomes[0].error or "")
    assert pool.run(math.sqrt, [(16.0,)], timeout_s=5)[0].value == 4.0


def test_an_unpicklable_function_gives_errors_not_an_exception(pool: TimeoutPool) -> None:
    outcomes = pool.run(lambda x: x, [(1,), (2,)], timeout_s=5)
    assert [o.status for o in outcomes] == ["error", "error"]
    assert "cannot be sent to a worker" in (outcomes[0].error or "")


def test_a_function_that_fails_to_load_fails_every_call(pool: TimeoutPool) -> None:
    outcomes = pool.run(_BreaksWhenLoaded(), [(1,), (2,), (3,)], timeout_s=5)  # type: ignore[arg-type]
    assert [o.status for o in outcomes] == ["error"] * 3
    assert "could not load the function: ZeroDivisionError" in (outcomes[0].error or "")


def test_an_unpicklable_result_is_reported(pool: TimeoutPool) -> None:
    (outcome,) = pool.run(threading.Lock, [()], timeout_s=5)
    assert outcome.status == "error"
    assert "could not be sent back" in (outcome.error or "")


def test_it_refuses_a_non_positive_timeout(pool: TimeoutPool) -> None:
    with pytest.raises(ValueError, match="timeouts must be > 0"):
        pool.run(math.sqrt, [(1.0,)], timeout_s=0)


def test_close_stops_the_workers_and_the_pool_can_be_reused() -> None:
    with TimeoutPool(max_workers=1) as own:
        own.run(math.sqrt, [(1.0,)], timeout_s=5)
        assert len(own.worker_pids) == 1
        own.close()
        assert own.worker_pids == []
        assert own.run(math.sqrt, [(25.0,)], timeout_s=5)[0].value == 5.0


class _ExitsWhenLoaded:
    """Unpickling in the worker kills the worker process."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return os._exit, (7,)


def test_a_worker_dying_while_loading_fails_the_batch_without_retrying_forever(pool: TimeoutPool) -> None:
    outcomes = pool.run(_ExitsWhenLoaded(), [(i,) for i in range(20)], timeout_s=5)  # type: ignore[arg-type]
    assert {o.status for o in outcomes} == {"error"}
    assert "exit code 7" in (outcomes[-1].error or "")
    assert pool.run(math.sqrt, [(4.0,)], timeout_s=5)[0].value == 2.0
