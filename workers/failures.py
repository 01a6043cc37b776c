"""How a task's failure is recorded: the message a user reads, and the traceback kept for a bug.

Every text here passes through ``trainer.verifiers.secrets.scrub`` first: a secret value provided to this
process (a judge's API key, which an endpoint error or a library may repeat in an exception's text) never
reaches the worker log or a stored failure.
"""

from __future__ import annotations

import logging
import traceback

logger = logging.getLogger(__name__)

TRACEBACK_LIMIT = 20_000  # characters kept of an unexpected error's traceback (its end: where it broke)


def describe_failure(err: Exception, what: str) -> tuple[str, str]:
    """(message, traceback) for ``err``, called inside its ``except`` block. A trainer ``RLVRError`` is meant
    for the user and is shown as it is, with no traceback; anything else is a bug: its type and text, the
    end of its traceback, and a log entry naming ``what`` failed. Secret values are scrubbed from all three
    (the log entry carries the scrubbed traceback as text, never the exception itself, which a log handler
    would format unscrubbed)."""
    from trainer.errors import RLVRError
    from trainer.verifiers.secrets import scrub

    if isinstance(err, RLVRError):
        return scrub(str(err)), ""
    trace = scrub(traceback.format_exc())
    logger.error("%s failed\n%s", what, trace.rstrip("\n"))
    return scrub(f"{type(err).__name__}: {err}"), trace[-TRACEBACK_LIMIT:]
