"""The one helper through which realtime events reach browsers (STYLE.md habit 8).

Events go to the Channels group ``run.<id>`` only after the surrounding transaction commits, so a
browser never hears of a step the database does not hold yet. If the channel layer (Redis) is down or
slow the event is dropped with a warning after at most ``PUBLISH_TIMEOUT_S``: the data is already
stored, the run goes on, and a client catches up through the REST API from its last step.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

# A training step must never wait on a dead Redis for long.
PUBLISH_TIMEOUT_S = 2.0


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def publish_after_commit(*, group: str, message: dict[str, Any], what: str) -> None:
    """Send ``message`` to a Channels ``group`` after the surrounding transaction commits (at once when none
    is open); a dead or slow channel layer costs a warning naming ``what``, never the caller."""

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return

        async def group_send() -> None:
            await asyncio.wait_for(layer.group_send(group, message), timeout=PUBLISH_TIMEOUT_S)

        try:
            async_to_sync(group_send)()
        except Exception as err:  # Redis down: stored data is intact, clients catch up over REST
            logger.warning("could not publish %s: %s", what, err)

    transaction.on_commit(send)


def publish_run_event(*, run_id: int, event: str, payload: dict[str, Any]) -> None:
    """Send ``{"type": "run.event", "event": event, "run_id": run_id, "payload": payload}`` to ``run.<id>``
    after commit (at once when no transaction is open).

    ``event`` is one of ``run.status``, ``run.step``, ``run.checkpoint``, ``run.log``; the websocket
    consumer forwards it to clients as ``{"type": event, "run_id": run_id, **payload}``.
    """
    message = {"type": "run.event", "event": event, "run_id": run_id, "payload": payload}
    publish_after_commit(group=run_group(run_id), message=message, what=f"{event} for run {run_id}")
