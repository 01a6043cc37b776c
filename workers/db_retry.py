"""Riding through a database outage: a write the worker must not lose is retried while the database is
unreachable, up to ``settings.RLVR_DB_RETRY_S`` (env, default 90 s), with exponential backoff.

Only connection errors are retried (``OperationalError``, ``InterfaceError``: the server restarted, the
socket broke, a connection was refused); a constraint or a programming error is raised at once. Before
each retry the broken connection is closed, so Django opens a fresh one. What is retried must be
idempotent: ``run_record_step`` replaces its step (a batch that had committed before the error was seen is
written again, not twice), ``run_record_checkpoint`` updates or creates, ``run_finish`` / ``run_fail`` set a
status. Past the window ``DatabaseUnavailable`` is raised: the run stops, and if even its final status
cannot be written, the lease is released and the periodic sweep (workers/sweep.py) recovers it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)

T = TypeVar("T")
FIRST_DELAY_S = 0.25
MAX_DELAY_S = 5.0


class DatabaseUnavailable(RuntimeError):
    """The database stayed unreachable for the whole retry window."""


def retry_window_s() -> float:
    from django.conf import settings

    return float(settings.RLVR_DB_RETRY_S)


def with_db_retry(
    write: Callable[[], T],
    what: str,
    *,
    window_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``write()``, retried on connection errors with backoff (0.25 s doubling to 5 s) for ``window_s``;
    raises DatabaseUnavailable (from the last error) once the window has passed."""
    window = retry_window_s() if window_s is None else window_s
    deadline = clock() + window
    delay, tries = FIRST_DELAY_S, 0
    while True:
        try:
            result = write()
        except (OperationalError, InterfaceError) as err:
            tries += 1
            _close_broken()
            if clock() + delay > deadline:
                raise DatabaseUnavailable(
                    f"the database was unreachable for more than {window:g} s while {what}: {err}".replace(
                        "\n", " "
                    )
                ) from err
            if tries == 1:
                logger.warning(
                    "%s: the database is unreachable (%s); retrying for up to %g s", what, err, window
                )
            sleep(delay)
            delay = min(delay * 2, MAX_DELAY_S)
        else:
            if tries:
                logger.warning("%s: the database is back after %d retries", what, tries)
            return result


def _close_broken() -> None:
    """Drop this thread's broken connection, so the next query connects afresh."""
    try:
        connection.close()
    except Exception as err:  # closing a connection whose server is gone may complain; it is gone either way
        logger.debug("closing a broken database connection: %s", err)
