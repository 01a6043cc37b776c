"""``/ws/runs/<id>/``: a run's live events, for its project's members only.

On connect the client gets ``run.hello`` (status and the last stored step), then a ``run.status`` event
with where the run stands now, then every event published to the group ``run.<id>`` as
``{"type": event, "run_id": id, ...payload}``: ``run.status``, ``run.step``, ``run.checkpoint``,
``run.log``. Events are fire-and-forget: the ``run.status`` that ended a run may have been sent while a
client was away, so every (re)connect repeats the current one (``succeeded`` / ``failed`` /
``cancelled`` with its ``error_message``). A client that was away catches up on steps through
``GET /api/runs/<id>/metrics/?since_step=<its last step>`` and then keeps listening.

Close codes: 4401 not authenticated, 4404 no such run or not a member (outsiders cannot probe ids), and
any path no route matches (``UnknownPathConsumer``); 4503 live updates paused: the channel layer (Redis)
cannot be reached, said first in a ``live.paused`` message the page shows (it reloads from the REST API and
reconnects later). The connection is accepted first and then closed, so the browser sees the code (a refusal
before accepting would be a bare HTTP 403, and an exception an HTTP 500).

Messages from the client are at most ``MAX_CLIENT_MESSAGE_CHARS`` and read by the strict JSON reader: parsing
runs on the event loop, so it must stay small.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404
from redis.exceptions import RedisError

from trainer.bounds import UnsafeInput, strict_json_loads
from webapp.realtime.publish import run_group

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_LIVE_PAUSED = 4503
MAX_ID = 2**63 - 1  # the primary keys are bigint: a larger id is no row, not a database error
MAX_CLIENT_MESSAGE_CHARS = 4096  # a ping is a few bytes
LAYER_TIMEOUT_S = 5.0  # joining a group on an unreachable (not refusing) Redis host fails after this
LAYER_ERRORS = (RedisError, OSError)  # OSError covers refused connections and asyncio's TimeoutError
LIVE_PAUSED = {
    "type": "live.paused",
    "message": "Live updates are paused: the server cannot reach its message broker (Redis). "
    "What is stored is shown; the page reconnects by itself.",
}


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """A websocket that never answers with a server error: a channel layer that cannot be reached (at connect
    or later) becomes ``live.paused`` and close code 4503, and client messages are bounded before parsing."""

    accepted = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        except LAYER_ERRORS as err:
            logger.warning(
                "live updates paused on %s: the channel layer cannot be reached (%r)", scope.get("path"), err
            )
            if not self.accepted:
                await self.base_send({"type": "websocket.accept"})
            await self.base_send({"type": "websocket.send", "text": json.dumps(LIVE_PAUSED)})
            await self.base_send({"type": "websocket.close", "code": CLOSE_LIVE_PAUSED})

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        await super().accept(subprotocol, headers)
        self.accepted = True

    async def join(self, group: str) -> None:
        await asyncio.wait_for(self.channel_layer.group_add(group, self.channel_name), LAYER_TIMEOUT_S)

    def route_id(self, name: str) -> int | None:
        """The id in the path, or None past the largest key (no such row)."""
        value = int(self.scope["url_route"]["kwargs"][name])
        return value if value <= MAX_ID else None

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MAX_CLIENT_MESSAGE_CHARS:
            await self.send_json(
                {
                    "type": "error",
                    "message": f"send JSON text of at most {MAX_CLIENT_MESSAGE_CHARS} characters",
                }
            )
            return
        try:
            content = strict_json_loads(text_data)
        except (UnsafeInput, json.JSONDecodeError) as err:
            await self.send_json({"type": "error", "message": f"not a message this socket reads: {err}"})
            return
        await self.receive_json(content)


class UnknownPathConsumer(LiveConsumer):
    """Every websocket path no route matches (a non-numeric id too): accepted, then closed with 4404."""

    channel_layer_alias = "no layer"  # needs none: refusing works with Redis down

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


def run_visible(*, user: Any, run_id: int) -> bool:
    """Whether the run exists and ``user`` is a member of its project (any role may watch)."""
    from webapp.experiments.selectors import run_get
    from webapp.teams.selectors import membership_role

    try:
        run = run_get(run_id=run_id)
    except (ObjectDoesNotExist, Http404):
        return False
    return membership_role(project=run.experiment.project, user=user) is not None


def first_messages(*, run_id: int) -> list[dict[str, Any]]:
    """The first messages, read in one query: ``run.hello`` (where the run stands, with the last stored
    ``step``, so the client knows from which step to catch up), then the current ``run.status``, as the
    group would have sent it, so a client that missed the final one while away still sees it."""
    from webapp.experiments.selectors import run_get, run_status_payload

    run = run_get(run_id=run_id)
    status = run_status_payload(run=run)
    hello = {
        "type": "run.hello",
        "run_id": run.pk,
        **status,
        "catch_up": f"/api/runs/{run.pk}/metrics/?since_step=",
    }
    return [hello, {"type": "run.status", "run_id": run.pk, **status}]


class RunConsumer(LiveConsumer):
    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        run_id = self.route_id("run_id")
        if user is None or not user.is_authenticated:
            await self._refuse(CLOSE_UNAUTHENTICATED)
            return
        if run_id is None or not await database_sync_to_async(run_visible)(user=user, run_id=run_id):
            await self._refuse(CLOSE_NOT_FOUND)
            return
        # Join before reading the state: an event published in between arrives after the hello, not never.
        await self.join(run_group(run_id))
        self.group = run_group(run_id)
        first = await database_sync_to_async(first_messages)(run_id=run_id)
        await self.accept()
        for message in first:
            await self.send_json(message)

    async def _refuse(self, code: int) -> None:
        await self.accept()
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def run_event(self, message: dict[str, Any]) -> None:
        """Handler for ``{"type": "run.event", ...}`` sent by webapp.realtime.publish."""
        await self.send_json({"type": message["event"], "run_id": message["run_id"], **message["payload"]})
