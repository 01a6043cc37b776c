"""The run websocket: who may connect, what a client hears first, and which events reach it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import transaction
from pytest_django import Settings

from tests.workers.helpers import launch_run, make_project, make_user
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import Run
from webapp.realtime.publish import publish_run_event
from webapp.realtime.routing import websocket_urlpatterns
from webapp.teams.models import Membership, Role
from webapp.websocket_auth import TokenAuthMiddleware

# Session auth and the origin check are Channels' own; the token middleware + routes are ours.
application = TokenAuthMiddleware(URLRouter(websocket_urlpatterns))


@pytest.fixture(autouse=True)
def memory_layer(settings: Settings) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.RLVR_ENQUEUE = False
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def alice(transactional_db: None) -> Any:
    # Transactional: the consumer's database_sync_to_async closes connections it finds inside a transaction.
    return make_user("alice")


@pytest.fixture
def run(alice: Any) -> Run:
    launched: Run = launch_run(alice, make_project(alice), {"training": {"max_steps": 10}})
    return launched


def token_for(user: Any) -> str:
    return issue_token(user).token


def connect(path: str) -> tuple[bool, list[dict[str, Any]]]:
    """Connect, then read what the server sends before going quiet (or closing)."""

    async def go() -> tuple[bool, list[dict[str, Any]]]:
        communicator = WebsocketCommunicator(application, path)
        connected, _ = await communicator.connect()
        received: list[dict[str, Any]] = []
        while not await communicator.receive_nothing(timeout=0.2):
            received.append(await communicator.receive_output())
        await communicator.disconnect()
        return connected, received

    return async_to_sync(go)()


def closed_with(received: list[dict[str, Any]]) -> int | None:
    closes = [m for m in received if m["type"] == "websocket.close"]
    return closes[0].get("code") if closes else None


def test_a_socket_without_credentials_is_closed_with_4401(run: Run) -> None:
    _, received = connect(f"/ws/runs/{run.pk}/")
    assert closed_with(received) == 4401


def test_a_socket_with_an_unknown_token_is_closed_with_4401(run: Run) -> None:
    _, received = connect(f"/ws/runs/{run.pk}/?token=not-a-token")
    assert closed_with(received) == 4401


def test_an_outsider_is_closed_with_4404_as_if_the_run_did_not_exist(run: Run) -> None:
    bob = make_user("bob")
    _, received = connect(f"/ws/runs/{run.pk}/?token={token_for(bob)}")
    assert closed_with(received) == 4404
    _, received = connect(f"/ws/runs/{run.pk + 1000}/?token={token_for(make_user('carol'))}")
    assert closed_with(received) == 4404


def test_a_viewer_hears_the_run_s_status_and_last_stored_step_first(run: Run) -> None:
    bob = make_user("bob")
    Membership.objects.create(project=run.experiment.project, user=bob, role=Role.VIEWER)
    Run.objects.filter(pk=run.pk).update(status="running", step=7)

    connected, received = connect(f"/ws/runs/{run.pk}/?token={token_for(bob)}")

    assert connected and closed_with(received) is None
    hello = received[0]
    assert hello["type"] == "websocket.send"
    assert (
        '"type": "run.hello"' in hello["text"]
        and '"step": 7' in hello["text"]
        and '"status": "running"' in hello["text"]
    )


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ("succeeded", ""),
        ("failed", "CUDA out of memory: lower training.micro_batch_size"),
        ("cancelled", ""),
    ],
)
def test_a_client_that_reconnects_after_the_run_ended_hears_its_final_status_and_message(
    run: Run, alice: Any, status: str, message: str
) -> None:
    token = token_for(alice)
    _, before = connect(f"/ws/runs/{run.pk}/?token={token}")  # connected while the run was queued
    assert [json.loads(m["text"])["type"] for m in before if m["type"] == "websocket.send"] == [
        "run.hello",
        "run.status",
    ]
    # The run ends while the client is away: the final run.status goes to nobody.
    Run.objects.filter(pk=run.pk).update(status=status, step=10, error_message=message)
    publish_run_event(run_id=run.pk, event="run.status", payload={"status": status})

    _, received = connect(f"/ws/runs/{run.pk}/?token={token}")

    sent = [json.loads(m["text"]) for m in received if m["type"] == "websocket.send"]
    final = [m for m in sent if m["type"] == "run.status"]
    assert len(final) == 1, sent
    assert final[0]["run_id"] == run.pk and final[0]["status"] == status and final[0]["step"] == 10
    assert final[0]["error_message"] == message


def test_events_of_the_run_reach_a_connected_member(run: Run, alice: Any) -> None:
    token = token_for(alice)

    async def go() -> list[Any]:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/?token={token}")
        await communicator.connect()
        hello = await communicator.receive_json_from()
        await communicator.receive_json_from()  # the current run.status
        publish = sync_to_async(publish_run_event)
        await publish(
            run_id=run.pk, event="run.step", payload={"step": 1, "metrics": {"rollout/reward_mean": 0.5}}
        )
        await publish(run_id=run.pk + 1, event="run.step", payload={"step": 9, "metrics": {}})  # another run
        step = await communicator.receive_json_from()
        quiet = await communicator.receive_nothing(timeout=0.2)
        await communicator.disconnect()
        return [hello, step, quiet]

    hello, step, quiet = async_to_sync(go)()  # no transaction is open: each event is published at once

    assert hello["type"] == "run.hello"
    assert step == {"type": "run.step", "run_id": run.pk, "step": 1, "metrics": {"rollout/reward_mean": 0.5}}
    assert quiet


def test_an_event_is_not_published_when_its_transaction_rolls_back(run: Run, alice: Any) -> None:
    token = token_for(alice)

    async def go() -> bool:
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/?token={token}")
        await communicator.connect()
        await communicator.receive_json_from()  # run.hello
        await communicator.receive_json_from()  # run.status
        await sync_to_async(publish_in_rolled_back_transaction)(run.pk)
        quiet = await communicator.receive_nothing(timeout=0.2)
        await communicator.disconnect()
        return quiet

    assert async_to_sync(go)()


def publish_in_rolled_back_transaction(run_id: int) -> None:
    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        publish_run_event(run_id=run_id, event="run.step", payload={"step": 1})
        raise Rollback
