"""The one helper through which realtime events reach browsers (STYLE.md habit 8).

Events go to the Channels group ``run.<id>`` only after the surrounding transaction commits, so a
browser never hears of a step the database does not hold yet. If the channel layer (Redis) is down the
event is dropped with a warning: the data is already stored, and a client catches up through the REST
API from its last step.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def publish_run_event(*, run_id: int, event: str, payload: dict[str, Any]) -> None:
    """Send ``{"type": "run.event", "event": event, "payload": payload}`` to ``run.<id>`` after commit.

    ``event`` is one of ``run.status``, ``run.step``, ``run.checkpoint``, ``run.log``.
    """

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(
                run_group(run_id), {"type": "run.event", "event": event, "run_id": run_id, "payload": payload}
            )
        except Exception as err:  # Redis down: stored data is intact, clients catch up over REST
            logger.warning("could not publish %s for run %s: %s", event, run_id, err)

    transaction.on_commit(send)
