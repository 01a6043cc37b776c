"""Realtime events of an evaluation, sent to the Channels group ``eval.<id>`` after commit.

The same rules as webapp/realtime/publish.py (the run events): only after the transaction commits, and
a dead or slow channel layer costs a warning after ``PUBLISH_TIMEOUT_S``, never the evaluation. Events:
``eval.status`` (status, problems done/total, metrics when finished) and ``eval.progress`` (the problems
just stored, as table rows).
"""

from __future__ import annotations

from typing import Any

from webapp.realtime.publish import publish_after_commit


def eval_group(eval_run_id: int) -> str:
    return f"eval.{eval_run_id}"


def publish_eval_event(*, eval_run_id: int, event: str, payload: dict[str, Any]) -> None:
    """Send ``{"type": "eval.event", "event": event, "eval_run_id": id, "payload": payload}`` after commit;
    the consumer forwards it as ``{"type": event, "eval_run_id": id, **payload}``."""
    message = {"type": "eval.event", "event": event, "eval_run_id": eval_run_id, "payload": payload}
    publish_after_commit(
        group=eval_group(eval_run_id), message=message, what=f"{event} for evaluation {eval_run_id}"
    )
