"""How a task's failure is recorded: the message a user reads, and the traceback kept for a bug."""

from __future__ import annotations

import logging
import traceback

logger = logging.getLogger(__name__)

TRACEBACK_LIMIT = 20_000  # characters kept of an unexpected error's traceback (its end: where it broke)


def describe_failure(err: Exception, what: str) -> tuple[str, str]:
    """(message, traceback) for ``err``, called inside its ``except`` block. A trainer ``RLVRError`` is meant
    for the user and is shown as it is, with no traceback; anything else is a bug: its type and text, the
    end of its traceback, and a log entry naming ``what`` failed."""
    from trainer.errors import RLVRError

    if isinstance(err, RLVRError):
        return str(err), ""
    logger.exception("%s failed", what)
    return f"{type(err).__name__}: {err}", traceback.format_exc()[-TRACEBACK_LIMIT:]
