"""``rlvr tail`` against the real server: the REST API through Django's WSGI app and the websocket's real
first messages, for a client that (re)connects after the run's final ``run.status`` was sent."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.wsgi import get_wsgi_application
from pytest_django import Settings

from rlvr_client.client import Api, Tail
from tests.workers.helpers import launch_run, make_project, make_user
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import Run
from webapp.realtime.routing import websocket_urlpatterns
from webapp.websocket_auth import TokenAuthMiddleware

application = TokenAuthMiddleware(URLRouter(websocket_urlpatterns))


@pytest.fixture(autouse=True)
def memory_layer(settings: Settings) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.RLVR_ENQUEUE = False
    settings.ALLOWED_HOSTS = ["testserver"]
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def owner(transactional_db: None) -> Any:
    return make_user("alice")


def first_messages(run_id: int, token: str) -> list[dict[str, Any]]:
    """What the websocket sends a client that connects now, until it goes quiet."""

    async def go() -> list[dict[str, Any]]:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run_id}/?token={token}")
        await communicator.connect()
        received = []
        while not await communicator.receive_nothing(timeout=0.2):
            received.append(await communicator.receive_json_from())
        await communicator.disconnect()
        return received

    return async_to_sync(go)()


def tail_of(run_id: int, token: str, out: StringIO) -> Tail:
    return Tail(
        Api("http://testserver", token, transport=httpx.WSGITransport(app=get_wsgi_application())),
        run_id,
        out,
    )


def test_tail_reconnecting_after_the_run_failed_prints_the_failure_and_its_message(owner: Any) -> None:
    run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    Run.objects.filter(pk=run.pk).update(
        status="failed", step=3, error_message="Training diverged: the loss became nan"
    )
    token = issue_token(owner).token
    out = StringIO()
    tail = tail_of(run.pk, token, out)

    ended = [tail.handle(message) for message in first_messages(run.pk, token)]

    assert ended[0] and tail.status == "failed"
    assert tail.finish() == 1
    assert (
        out.getvalue().splitlines()[-1]
        == f"run {run.pk} failed at step 3: Training diverged: the loss became nan"
    )


def never(seconds: float) -> None:
    raise AssertionError("tail kept waiting on a run that will not move")


def test_tail_stops_on_a_run_the_queue_refused_and_says_how_to_queue_it(owner: Any) -> None:
    run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    hint = f"Could not send the run to a worker. POST /api/runs/{run.pk}/queue/"
    Run.objects.filter(pk=run.pk).update(status="not_queued", error_message=hint)
    out = StringIO()

    code = tail_of(run.pk, issue_token(owner).token, out).run(None, sleep=never)

    assert code == 1
    assert out.getvalue().splitlines()[-1] == f"run {run.pk} not_queued at step 0: {hint}"


def test_tail_by_polling_follows_a_running_run_to_its_end(owner: Any) -> None:
    run = launch_run(owner, make_project(owner), {"training": {"max_steps": 10}})
    Run.objects.filter(pk=run.pk).update(status="running", step=2)
    polls: list[float] = []

    def worker_finishes(seconds: float) -> None:  # while tail sleeps, the run ends
        polls.append(seconds)
        Run.objects.filter(pk=run.pk).update(status="cancelled", step=4)

    out = StringIO()
    code = tail_of(run.pk, issue_token(owner).token, out).run(None, sleep=worker_finishes)

    assert len(polls) == 1 and code == 1
    assert out.getvalue().splitlines()[-1] == f"run {run.pk} cancelled at step 4"
