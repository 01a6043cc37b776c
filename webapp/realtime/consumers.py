"""``/ws/runs/<id>/``: a run's live events, for its project's members only.

On connect the client gets ``run.hello`` (status and the last stored step), then a ``run.status`` event
with where the run stands now, then every event published to the group ``run.<id>`` as
``{"type": event, "run_id": id, ...payload}``: ``run.status``, ``run.step``, ``run.checkpoint``,
``run.log``. Events are fire-and-forget: the ``run.status`` that ended a run may have been sent while a
client was away, so every (re)connect repeats the current one (``succeeded`` / ``failed`` /
``cancelled`` with its ``error_message``). A client that was away catches up on steps through
``GET /api/runs/<id>/metrics/?since_step=<its last step>`` and then keeps listening.

Close codes: 4401 not authenticated, 4404 no such run or not a member (outsiders cannot probe ids).
The connection is accepted first and then closed, so the browser sees the code (a refusal before
accepting would be a bare HTTP 403).
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404

from webapp.realtime.publish import run_group

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


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
    hello = {"type": "run.hello", "run_id": run.pk, **status, "catch_up": f"/api/runs/{run.pk}/metrics/?since_step="}
    return [hello, {"type": "run.status", "run_id": run.pk, **status}]


class RunConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if user is None or not user.is_authenticated:
            await self._refuse(CLOSE_UNAUTHENTICATED)
            return
        if not await database_sync_to_async(run_visible)(user=user, run_id=run_id):
            await self._refuse(CLOSE_NOT_FOUND)
            return
        # Join before reading the state: an event published in between arrives after the hello, not never.
        self.group = run_group(run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
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
