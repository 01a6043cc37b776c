"""Sending a Celery task once the database rows it reads are committed, and saying so when it cannot be sent."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)


def send_after_commit(send: Callable[[], object], on_failure: Callable[[Exception], None], what: str) -> None:
    """Call ``send`` (enqueue a task) after the surrounding transaction commits (at once when none is open).

    A worker must not see an id whose row is not committed yet. When the broker cannot take the message
    (Redis down), ``on_failure`` records why on the row instead of leaving it queued forever; ``what``
    names it in the log.
    """

    def run() -> None:
        try:
            send()
        except Exception as err:
            logger.exception("could not enqueue %s", what)
            on_failure(err)

    transaction.on_commit(run)
