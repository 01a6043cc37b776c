"""Realtime events of an evaluation, sent to the Channels group ``eval.<id>`` after commit.

The same rules as webapp/realtime/publish.py (the run events): only after the transaction commits, and
a dead or slow channel layer costs a warning after ``PUBLISH_TIMEOUT_S``, never the evaluation. Events:
``eval.status`` (status, problems done/total, metrics when finished) and ``eval.progress`` (the problems
just stored, as table rows).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from webapp.realtime.publish import PUBLISH_TIMEOUT_S

logger = logging.getLogger(__name__)


def eval_group(eval_run_id: int) -> str:
    return f"eval.{eval_run_id}"


def publish_eval_event(*, eval_run_id: int, event: str, payload: dict[str, Any]) -> None:
    """Send ``{"type": "eval.event", "event": event, "eval_run_id": id, "payload": payload}`` after commit;
    the consumer forwards it as ``{"type": event, "eval_run_id": id, **payload}``."""
    message = {"type": "eval.event", "event": event, "eval_run_id": eval_run_id, "payload": payload}

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return

        async def group_send() -> None:
            await asyncio.wait_for(layer.group_send(eval_group(eval_run_id), message), timeout=PUBLISH_TIMEOUT_S)

        try:
            async_to_sync(group_send)()
        except Exception as err:  # Redis down: the rows are stored; the page catches up over REST
            logger.warning("could not publish %s for evaluation %s: %s", event, eval_run_id, err)

    transaction.on_commit(send)
