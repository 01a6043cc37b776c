"""Sending a Celery task once the database rows it reads are committed, and telling the client when the
broker refused it.

The send runs in a ``transaction.on_commit`` hook: a worker must never see an id whose row is not
committed yet. ``ATOMIC_REQUESTS`` is off (webapp/settings.py), so in a request the hooks of a service's
outermost ``transaction.atomic()`` run when that block exits, still inside the request. When the broker
refuses a message (Redis down), ``on_failure`` records it on the row (a run becomes ``not_queued``, an
evaluation or verification job ``failed``, each with how to start it again), and once every send of that
commit has been tried, :class:`QueueUnavailable` is raised out of the ``with transaction.atomic()``
block, so the API answers 503 in its one error shape instead of a 201 for work that will never run.

The error leaves through Django's commit-hook runner, which then skips hooks registered *after* the
raising one: each service registers its send last in its block (realtime events before it), so nothing
is skipped. Where a caller holds an outer transaction (none does today), the sends run when that one
commits and the error is raised there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction

from webapp.core.errors import ApplicationError

logger = logging.getLogger(__name__)


class QueueUnavailable(ApplicationError):
    """The task queue (the Redis broker) refused a message; the rows are saved, the work is not queued.
    Answered as 503."""

    status_code = 503


@dataclass
class Unsent:
    what: str
    error: Exception
    message: str | None
    extra: dict[str, Any]


@dataclass
class _Batch:
    """The sends of one commit: the last of them to run raises if any of them failed."""

    pending: int = 0
    started: bool = False  # a hook ran: later sends belong to another commit
    unsent: list[Unsent] = field(default_factory=list)


def broker_description() -> str:
    """``Redis at redis://host:port/db`` (a password in REDIS_URL is masked)."""
    parts = urlsplit(settings.REDIS_URL)
    netloc = parts.netloc
    credentials, at, host = netloc.rpartition("@")
    if at and ":" in credentials:  # user:password@host, or :password@host
        user = credentials.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if user else f"***@{host}"
    return f"Redis at {urlunsplit(parts._replace(netloc=netloc))}"


def send_after_commit(
    send: Callable[[], object],
    on_failure: Callable[[Exception], None],
    what: str,
    *,
    unsent_message: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Call ``send`` (enqueue a task) after the surrounding transaction commits (at once when none is open).

    When the broker cannot take the message, ``on_failure(err)`` records why on the row, and then
    :class:`QueueUnavailable` is raised (with ``unsent_message``, or a message naming ``what``, and
    ``extra`` plus ``{"unsent": [what, ...]}``) after the last send of the same commit was tried, so no
    other send of that commit is skipped. ``what`` also names it in the log.
    """
    batch = _batch_of_this_commit()
    batch.pending += 1

    def run() -> None:
        batch.started = True
        try:
            send()
        except Exception as err:
            logger.exception("could not enqueue %s", what)
            batch.unsent.append(Unsent(what, err, unsent_message, dict(extra or {})))
            on_failure(err)
        finally:
            batch.pending -= 1
        if batch.pending == 0 and batch.unsent:
            raise queue_unavailable(batch.unsent)

    run.dispatch_batch = batch  # type: ignore[attr-defined]  # found by the next send of this commit
    transaction.on_commit(run)


def _batch_of_this_commit() -> _Batch:
    """The batch of the sends already waiting for this commit, or a new one.

    Hooks dropped by a rolled-back savepoint are no longer in ``run_on_commit``, so the count is taken
    again from what is registered now."""
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        return _Batch()
    ours = [getattr(func, "dispatch_batch", None) for _, func, _ in connection.run_on_commit]
    waiting = [b for b in ours if isinstance(b, _Batch) and not b.started]
    if not waiting:
        return _Batch()
    batch = waiting[-1]
    batch.pending = sum(1 for b in waiting if b is batch)
    return batch


def queue_unavailable(unsent: list[Unsent]) -> QueueUnavailable:
    first = unsent[0]
    message = first.message or (
        f"The task queue ({broker_description()}) is unreachable ({type(first.error).__name__}: {first.error}); "
        f"{first.what} was saved but not sent to a worker: start it again when the queue is back."
    )
    if len(unsent) > 1:
        message += f" The same holds for {len(unsent) - 1} more: {', '.join(u.what for u in unsent[1:])}."
    extra: dict[str, Any] = {}
    for item in unsent:
        extra.update(item.extra)
    extra["unsent"] = [u.what for u in unsent]
    return QueueUnavailable(message, extra)
