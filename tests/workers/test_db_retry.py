"""``with_db_retry`` (workers/db_retry.py) on an injected clock: connection errors are retried with growing
waits until the write succeeds or the window has passed; any other database error is raised at once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import IntegrityError, InterfaceError, OperationalError

from workers.db_retry import DatabaseUnavailable, with_db_retry


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def failing(times: int, error: Exception) -> tuple[Callable[[], str], list[int]]:
    calls: list[int] = []

    def write() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "stored"

    return write, calls


def test_a_write_is_retried_through_connection_errors_with_growing_waits() -> None:
    clock = Clock()
    write, calls = failing(3, OperationalError("terminating connection due to administrator command"))
    assert (
        with_db_retry(write, "storing step 23", window_s=60, sleep=clock.sleep, clock=lambda: clock.now)
        == "stored"
    )
    assert len(calls) == 4 and clock.waits == [0.25, 0.5, 1.0]


def test_a_database_down_past_the_window_raises_database_unavailable_saying_what_was_lost() -> None:
    clock = Clock()
    write, _ = failing(1000, InterfaceError("connection already closed"))
    with pytest.raises(
        DatabaseUnavailable, match="more than 10 s while storing step 23: connection already closed"
    ):
        with_db_retry(write, "storing step 23", window_s=10, sleep=clock.sleep, clock=lambda: clock.now)
    assert 5 <= clock.now <= 10 and max(clock.waits) <= 5.0


def test_an_error_that_is_not_about_the_connection_is_raised_at_once() -> None:
    write, calls = failing(1, IntegrityError("duplicate key value"))
    with pytest.raises(IntegrityError):
        with_db_retry(write, "storing step 23", window_s=60, sleep=lambda s: None)
    assert len(calls) == 1
