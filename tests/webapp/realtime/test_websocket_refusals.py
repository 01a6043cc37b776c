"""Websockets answer every hostile or unlucky connection with a close code, never an HTTP 500: unknown paths,
non-numeric and oversized ids, client messages that are not small JSON, and a channel layer (Redis) that is
down, which the client hears as ``live.paused`` before close code 4503."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import Run
from webapp.realtime.consumers import CLOSE_LIVE_PAUSED, CLOSE_NOT_FOUND, MAX_CLIENT_MESSAGE_CHARS
from webapp.realtime.routing import websocket_urlpatterns
from webapp.websocket_auth import TokenAuthMiddleware

application = TokenAuthMiddleware(URLRouter(websocket_urlpatterns))


def _layers(settings: Settings, layer: dict[str, Any]) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": layer}
    settings.RLVR_ENQUEUE = False
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def memory_layer(settings: Settings) -> Iterator[None]:
    yield from _layers(settings, {"BACKEND": "channels.layers.InMemoryChannelLayer"})


@pytest.fixture
def redis_down(settings: Settings) -> Iterator[None]:
    """A Redis channel layer pointed at a port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    layer = {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [f"redis://127.0.0.1:{port}/0"]},
    }
    yield from _layers(settings, layer)


@pytest.fixture
def alice(transactional_db: None) -> Any:
    return make_user("alice")


@pytest.fixture
def run(alice: Any) -> Run:
    launched: Run = launch_run(alice, make_project(alice), {"training": {"max_steps": 10}})
    return launched


def talk(path: str, messages: tuple[str, ...] = (), until: str = "websocket.close") -> list[dict[str, Any]]:
    """Connect, send ``messages`` as text, and return what the server sent up to the first output whose
    type (or, for a websocket.send, whose JSON type) is ``until``. Timeouts are generous: CI is shared."""

    async def go() -> list[dict[str, Any]]:
        communicator = WebsocketCommunicator(application, path)
        connected, code = await communicator.connect(timeout=20)
        if not connected:
            return [{"type": "websocket.close", "code": code}]
        for text in messages:
            await communicator.send_to(text_data=text)
        received: list[dict[str, Any]] = []
        while True:
            output = await communicator.receive_output(timeout=20)
            received.append(output)
            kind = (
                json.loads(output["text"])["type"] if output["type"] == "websocket.send" else output["type"]
            )
            if kind == until:
                break
        await communicator.disconnect()
        return received

    return async_to_sync(go)()


def closed_with(received: list[dict[str, Any]]) -> int | None:
    return next((m.get("code") for m in received if m["type"] == "websocket.close"), None)


def sent(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(m["text"]) for m in received if m["type"] == "websocket.send"]


@pytest.mark.parametrize("path", ["/ws/nothing/", "/", "/ws/runs/", "/ws/runs/1/extra/", "/ws/evals/x/"])
def test_an_unknown_path_is_closed_with_4404(path: str, memory_layer: None, db: None) -> None:
    assert closed_with(talk(path)) == CLOSE_NOT_FOUND


@pytest.mark.parametrize("run_id", ["abc", "-1", "1e3", "%00"])
def test_a_non_numeric_run_id_is_closed_with_4404(
    run_id: str, memory_layer: None, run: Run, alice: Any
) -> None:
    assert closed_with(talk(f"/ws/runs/{run_id}/?token={issue_token(alice).token}")) == CLOSE_NOT_FOUND


@pytest.mark.parametrize("digits", [20, 5000])
def test_a_run_id_past_the_largest_key_is_closed_with_4404(
    digits: int, memory_layer: None, alice: Any
) -> None:
    assert closed_with(talk(f"/ws/runs/{'9' * digits}/?token={issue_token(alice).token}")) == CLOSE_NOT_FOUND


def test_with_redis_down_a_member_hears_live_updates_are_paused_then_4503(
    redis_down: None, run: Run, alice: Any
) -> None:
    received = talk(f"/ws/runs/{run.pk}/?token={issue_token(alice).token}")
    assert [m["type"] for m in sent(received)] == ["live.paused"]
    assert "Live updates are paused" in sent(received)[0]["message"]
    assert closed_with(received) == CLOSE_LIVE_PAUSED


def test_with_redis_down_an_evaluation_socket_is_paused_too(redis_down: None, alice: Any) -> None:
    received = talk(f"/ws/evals/1/?token={issue_token(alice).token}")
    assert closed_with(received) == CLOSE_LIVE_PAUSED


def test_with_redis_down_an_unknown_path_is_still_closed_with_4404(redis_down: None, db: None) -> None:
    assert closed_with(talk("/ws/nothing/")) == CLOSE_NOT_FOUND


@pytest.mark.parametrize(
    "message",
    [
        "x" * (MAX_CLIENT_MESSAGE_CHARS + 1),
        '{"type": ' + "9" * 4000 + "}",
        "[" * 1000,
        "not json",
    ],
    ids=["oversized", "huge-integer", "deep", "not-json"],
)
def test_a_client_message_that_is_not_small_json_is_answered_and_the_socket_stays_open(
    message: str, memory_layer: None, run: Run, alice: Any
) -> None:
    received = talk(
        f"/ws/runs/{run.pk}/?token={issue_token(alice).token}", (message, '{"type": "ping"}'), "pong"
    )
    kinds = [m["type"] for m in sent(received)]
    assert kinds == ["run.hello", "run.status", "error", "pong"], kinds
    assert closed_with(received) is None
