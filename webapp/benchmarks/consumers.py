"""``/ws/evals/<id>/``: an evaluation's live progress, for its project's members only.

On connect the client gets ``eval.hello`` (what ``eval.status`` carries), then every event published to
the group ``eval.<id>``: ``eval.status`` and ``eval.progress`` (new problem rows). A client that was
away reloads ``GET /api/evals/<id>/problems/``. Close codes as for runs: 4401 not signed in, 4404 no such
evaluation or not a member.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.benchmarks.publish import eval_group
from webapp.realtime.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED, LiveConsumer


def eval_hello(*, user: Any, eval_run_id: int) -> dict[str, Any] | None:
    """The first message, or None when the evaluation does not exist or ``user`` is not a member."""
    from webapp.benchmarks.selectors import eval_run_get_for_user, eval_status_payload

    try:
        row = eval_run_get_for_user(eval_run_id=eval_run_id, user=user)
    except (Http404, PermissionDenied):
        return None
    return {"type": "eval.hello", "eval_run_id": row.pk, **eval_status_payload(eval_run=row)}


class EvalConsumer(
    LiveConsumer
):  # Redis down: live.paused and close code 4503 (webapp/realtime/consumers.py)
    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        eval_run_id = self.route_id("eval_run_id")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if eval_run_id is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        # Join before reading the state: an event published in between arrives after the hello, not never.
        await self.join(eval_group(eval_run_id))
        self.group = eval_group(eval_run_id)
        hello = await database_sync_to_async(eval_hello)(user=user, eval_run_id=eval_run_id)
        if hello is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send_json(hello)

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def eval_event(self, message: dict[str, Any]) -> None:
        """Handler for ``{"type": "eval.event", ...}`` sent by webapp.benchmarks.publish."""
        await self.send_json(
            {"type": message["event"], "eval_run_id": message["eval_run_id"], **message["payload"]}
        )
