"""An outside run may send multi-turn rollouts: ``details["episode"]`` is validated on ingest (its shape, a bound on
everything, spans within the rollout's own tokens) and refused with the path of the problem in the one error shape;
a well-formed one is stored as sent and the rollout browser draws it turn by turn."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import episode_json
from tests.webapp.ingest.helpers import batch, post, rollout, token_client
from webapp.experiments.models import Run
from webapp.ingest.episode import (
    MAX_CALLS_PER_TURN,
    MAX_EPISODE_TEXT,
    MAX_RESULT,
    MAX_TURNS,
    check_episode,
)
from webapp.teams.models import Project


def multi_turn(episode: dict[str, Any], n_tokens: int = 12) -> dict[str, Any]:
    sent = rollout(1, n_tokens=n_tokens, details={"calc": {"reason": "42"}, "episode": episode})
    sent["token_values"]["loss_mask"] = [0.0 if 3 <= i < 5 or 8 <= i < 10 else 1.0 for i in range(n_tokens)]
    return sent


def turn(start: int) -> dict[str, Any]:
    return {"model_span": [start, start + 1], "env_span": [start + 1, start + 1], "finish": "eos"}


def test_a_well_formed_episode_passes() -> None:
    check_episode(episode_json(), 12)


def test_the_bounds_themselves_pass() -> None:
    most_turns = episode_json(turns=[turn(k) for k in range(MAX_TURNS)], finish_reason="turns")
    check_episode(most_turns, MAX_TURNS)
    calls = [
        {"name": "t", "arguments": {}, "result": "r", "status": "ok", "seconds": 0.0}
    ] * MAX_CALLS_PER_TURN
    check_episode(episode_json(turns=[{**turn(0), "tool_calls": calls}]), 1)
    long_result = [{"name": "t", "arguments": None, "result": "x" * MAX_RESULT, "status": "ok", "seconds": 1}]
    check_episode(episode_json(turns=[{**turn(0), "tool_calls": long_result}]), 1)


def changed(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    episode = copy.deepcopy(episode_json())
    change(episode)
    return episode


BAD: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "no turns": (lambda e: e.update(turns=[]), "details.episode.turns: List should have at least 1 item"),
    "too many turns": (
        lambda e: e.update(turns=[turn(k) for k in range(MAX_TURNS + 1)]),
        f"details.episode.turns: List should have at most {MAX_TURNS} items",
    ),
    "span past the tokens": (
        lambda e: e["turns"][2].update(model_span=[10, 13], env_span=[13, 13]),
        "details.episode.turns.2.model_span: [10, 13) reaches past the rollout's 12 tokens",
    ),
    "reply before its turn": (
        lambda e: e["turns"][0].update(env_span=[2, 5]),
        "details.episode.turns.0.env_span: [2, 5) overlaps the span before it (which ends at 3)",
    ),
    "turns out of order": (
        lambda e: e["turns"][1].update(model_span=[4, 8]),
        "details.episode.turns.1.model_span: [4, 8) overlaps the span before it (which ends at 5)",
    ),
    "span backwards": (
        lambda e: e["turns"][1].update(env_span=[9, 8]),
        "details.episode.turns.1.env_span: [9, 8) ends before it starts",
    ),
    "span of three": (
        lambda e: e["turns"][0].update(model_span=[0, 1, 3]),
        "details.episode.turns.0.model_span",
    ),
    "negative index": (
        lambda e: e["turns"][0].update(model_span=[-1, 3]),
        "details.episode.turns.0.model_span.0",
    ),
    "index as text": (
        lambda e: e["turns"][0].update(model_span=["0", 3]),
        "details.episode.turns.0.model_span.0",
    ),
    "unknown status": (
        lambda e: e["turns"][0]["tool_calls"][0].update(status="crashed"),
        "details.episode.turns.0.tool_calls.0.status: Input should be 'ok', 'error', 'timeout' or 'invalid'",
    ),
    "too many calls": (
        lambda e: e["turns"][0].update(tool_calls=e["turns"][0]["tool_calls"] * (MAX_CALLS_PER_TURN + 1)),
        f"details.episode.turns.0.tool_calls: List should have at most {MAX_CALLS_PER_TURN} items",
    ),
    "result too long": (
        lambda e: e["turns"][0]["tool_calls"][0].update(result="x" * (MAX_RESULT + 1)),
        f"details.episode.turns.0.tool_calls.0.result: String should have at most {MAX_RESULT} characters",
    ),
    "arguments too long": (
        lambda e: e["turns"][0]["tool_calls"][0].update(arguments={"code": "x" * 70_000}),
        "details.episode.turns.0.tool_calls.0.arguments: Value error, at most 65,536 characters as JSON",
    ),
    "info too long": (
        lambda e: e["turns"][0].update(info={"log": "x" * 20_000}),
        "details.episode.turns.0.info: Value error, at most 10,000 characters as JSON",
    ),
    "negative seconds": (
        lambda e: e["turns"][0]["tool_calls"][0].update(seconds=-1),
        "details.episode.turns.0.tool_calls.0.seconds",
    ),
    "unknown finish": (
        lambda e: e.update(finish_reason="gave up"),
        "details.episode.finish_reason: Input should be 'done', 'turns' or 'length'",
    ),
    "no score": (lambda e: e.pop("score"), "details.episode.score: Field required"),
    "a misspelt key": (
        lambda e: e["turns"][0].update(tool_call=[]),
        "details.episode.turns.0.tool_call: Extra inputs are not permitted",
    ),
    "a reward as text": (
        lambda e: e["turns"][1].update(reward="0.5"),
        "details.episode.turns.1.reward: Input should be a valid number",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_malformed_episode_is_refused_naming_where(case: str) -> None:
    change, message = BAD[case]
    with pytest.raises(ValueError) as caught:
        check_episode(changed(change), 12)
    assert message in str(caught.value)


def test_the_tool_text_of_a_whole_episode_is_bounded() -> None:
    big = {"name": "t", "arguments": None, "result": "x" * MAX_RESULT, "status": "ok", "seconds": 0.0}
    per_turn = MAX_CALLS_PER_TURN
    turns_needed = MAX_EPISODE_TEXT // (MAX_RESULT * per_turn) + 1
    turns = [{**turn(k), "tool_calls": [big] * per_turn} for k in range(turns_needed)]
    with pytest.raises(ValueError, match="at most 1,000,000"):
        check_episode(episode_json(turns=turns), turns_needed)


def test_an_episode_without_tokens_to_index_is_refused() -> None:
    with pytest.raises(ValueError, match="past the rollout's 0 tokens"):
        check_episode(episode_json(), 0)


@pytest.mark.django_db
def test_a_bad_episode_is_refused_in_the_one_error_shape_and_stores_nothing(
    alice: User, project: Project
) -> None:
    episode = changed(lambda e: e["turns"][1].update(env_span=[8, 40]))
    response = post(token_client(alice), batch(project.slug, rollouts=[multi_turn(episode)]))

    assert response.status_code == 400, response.json()
    body = response.json()
    assert set(body) == {"message", "extra"}
    assert body["message"].startswith("The ingest batch is not valid: rollouts.0: ")
    assert "details.episode.turns.1.env_span: [8, 40) reaches past the rollout's 12 tokens" in body["message"]
    assert list(body["extra"]["fields"]) == ["rollouts.0"]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_an_outside_multi_turn_rollout_is_stored_as_sent_and_drawn_turn_by_turn(
    alice: User, project: Project
) -> None:
    response = post(token_client(alice), batch(project.slug, rollouts=[multi_turn(episode_json())]))
    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    stored = run.rollouts.get()
    assert stored.details["episode"] == episode_json()

    client = Client()
    client.force_login(alice)
    drawn = client.get(f"/runs/{run.pk}/rollouts/{stored.pk}/tokens/").json()["episode"]
    assert [t["model"] for t in drawn["turns"]] == [[0, 3], [5, 8], [10, 12]]
    assert [c["status"] for c in drawn["turns"][1]["tool_calls"]] == ["error", "invalid"]
    rows = client.get(f"/runs/{run.pk}/rollouts/rows/?step=1").json()["results"]
    assert rows[0]["turns"] == 3 and rows[0]["details"] == {"calc": {"reason": "42"}}
