"""The evaluation websocket /ws/evals/<id>/: members hear its status then each stored batch of problems."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from pytest_django import Settings

from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK, problem_result
from tests.workers.helpers import make_project, make_user
from webapp.accounts.tokens import issue_token
from webapp.benchmarks.models import EvalRun
from webapp.benchmarks.results import eval_record_problems
from webapp.realtime.routing import websocket_urlpatterns
from webapp.websocket_auth import TokenAuthMiddleware

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
    return make_user("alice")


@pytest.fixture
def eval_run(alice: Any) -> EvalRun:
    from webapp.benchmarks.services import benchmark_create, eval_launch
    from webapp.experiments.services import experiment_create

    project = make_project(alice)
    experiment = experiment_create(project=project, actor=alice, name="e", config={})
    benchmark = benchmark_create(
        project=project,
        actor=alice,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config=dict(SMALL_BENCHMARK),
    )
    return eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0]


def token_for(user: Any) -> str:
    return issue_token(user).token


def test_an_outsider_is_closed_with_4404_and_an_anonymous_socket_with_4401(eval_run: EvalRun) -> None:
    async def close_code(path: str) -> Any:
        communicator = WebsocketCommunicator(application, path)
        await communicator.connect()
        message = await communicator.receive_output(timeout=2)
        await communicator.disconnect()
        return message.get("code")

    assert async_to_sync(close_code)(f"/ws/evals/{eval_run.pk}/") == 4401
    assert async_to_sync(close_code)(f"/ws/evals/{eval_run.pk}/?token={token_for(make_user('bob'))}") == 4404


def test_a_member_hears_the_status_then_the_stored_problems(eval_run: EvalRun, alice: Any) -> None:
    token = token_for(alice)

    async def go() -> list[Any]:
        communicator = WebsocketCommunicator(application, f"/ws/evals/{eval_run.pk}/?token={token}")
        await communicator.connect()
        hello = await communicator.receive_json_from()
        await sync_to_async(eval_record_problems)(eval_run_id=eval_run.pk, problems=[problem_result("row-1")])
        progress = await communicator.receive_json_from()
        await communicator.disconnect()
        return [hello, progress]

    hello, progress = async_to_sync(go)()
    assert (hello["type"], hello["status"], hello["label"]) == ("eval.hello", "queued", "e (base)")
    assert progress["type"] == "eval.progress" and progress["problems_done"] == 1
    assert progress["problems"][0]["problem_id"] == "row-1" and progress["problems"][0]["c"] == 2
