"""A multi-turn rollout in the rollout browser: ``details["episode"]`` checked against the tokens and reshaped for
the page (turn spans, tool calls with compact JSON arguments, rewards), a malformed record shown as unreadable rather
than breaking the page, "N turns" in the table rows, and the REST API passing the record through unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import episode_json, rollout_record
from webapp.experiments.models import Run
from webapp.pages.selectors_episodes import (
    MAX_TEXT,
    MAX_TURNS,
    UNREADABLE,
    episode_turn_count,
    rollout_episode,
)


def test_a_well_formed_episode_becomes_turns_over_its_tokens() -> None:
    shown = rollout_episode(details={"calc": {}, "episode": episode_json()}, token_count=12)

    assert shown is not None
    assert (shown["finish_reason"], shown["reward"], shown["correct"]) == ("done", 1.0, True)
    assert [(t["model"], t["env"], t["finish"], t["reward"]) for t in shown["turns"]] == [
        ([0, 3], [3, 5], "stop", None),
        ([5, 8], [8, 10], "stop", 0.0),
        ([10, 12], [12, 12], "eos", 1.0),
    ]
    assert shown["turns"][0]["tool_calls"] == [
        {
            "name": "calc",
            "arguments": '{"expression":"6*7"}',
            "status": "ok",
            "seconds": 0.012,
            "result": "42",
        }
    ]
    assert [c["arguments"] for c in shown["turns"][1]["tool_calls"]] == ['{"expression":"1/0"}', None]
    assert [t["reply_truncated"] for t in shown["turns"]] == [False, True, False]


def test_keys_the_page_does_not_know_are_left_out() -> None:
    episode = episode_json()
    episode["turns"][0]["info"] = {"secret_note": "<b>x</b>"}
    episode["turns"][0]["scratch"] = {"later": "trainer key"}
    shown = rollout_episode(details={"episode": episode}, token_count=12)
    assert shown is not None
    assert set(shown["turns"][0]) == {"model", "env", "finish", "reward", "reply_truncated", "tool_calls"}


def test_a_reward_the_trainer_could_not_compute_is_no_reward() -> None:
    episode = episode_json(score={"reward": "nan", "correct": False, "detail": {"absent": "judge down"}})
    episode["turns"][1]["reward"] = "nan"  # how trainer/jsonable.py writes a NaN
    shown = rollout_episode(details={"episode": episode}, token_count=12)
    assert shown is not None
    assert shown["reward"] is None and shown["turns"][1]["reward"] is None and shown["correct"] is False


def test_without_an_episode_there_is_nothing_to_draw() -> None:
    assert rollout_episode(details={"calc": {"reason": "ok"}}, token_count=12) is None
    assert rollout_episode(details=None, token_count=0) is None
    assert episode_turn_count({"calc": {}}) is None and episode_turn_count(None) is None
    assert episode_turn_count({"episode": episode_json()}) == 3


def test_long_texts_are_cut_for_the_page_and_say_so() -> None:
    episode = episode_json()
    episode["turns"][0]["tool_calls"][0]["result"] = "y" * (MAX_TEXT + 5)
    shown = rollout_episode(details={"episode": episode}, token_count=12)
    assert shown is not None
    result = shown["turns"][0]["tool_calls"][0]["result"]
    assert result.startswith("y" * MAX_TEXT) and result.endswith("[... 5 more characters]")


def broken(path: str, value: Any) -> dict[str, Any]:
    episode = copy.deepcopy(episode_json())
    target: Any = episode
    *parents, last = path.split(".")
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return episode


MALFORMED: dict[str, tuple[Any, str]] = {
    "not an object": ("3 turns", "episode is not an object"),
    "no turns": (broken("turns", []), "at least one turn"),
    "too many turns": (
        episode_json(
            turns=[{"model_span": [k, k], "env_span": [k, k], "finish": "eos"} for k in range(MAX_TURNS + 1)]
        ),
        f"65 turns, more than the {MAX_TURNS}",
    ),
    "span past the tokens": (broken("turns.2.model_span", [10, 13]), "turn 3: model span [10, 13)"),
    "reply before its turn": (broken("turns.0.env_span", [2, 5]), "turn 1: environment span [2, 5)"),
    "overlapping turns": (broken("turns.1.model_span", [4, 8]), "turn 2: model span [4, 8)"),
    "span as text": (broken("turns.0.model_span", "0-3"), "turn 1: model span: a span is two token indices"),
    "bool index": (broken("turns.0.model_span", [False, 3]), "two token indices"),
    "unknown finish": (broken("turns.0.finish", "tired"), "turn 1: finish is one of eos, stop, length"),
    "unknown status": (
        broken("turns.0.tool_calls.0.status", "<b>ok</b>"),
        "turn 1: tool call 1: status is one of ok, error, timeout, invalid",
    ),
    "arguments a list": (broken("turns.0.tool_calls.0.arguments", [1, 2]), "arguments are an object or null"),
    "result a number": (broken("turns.0.tool_calls.0.result", 42), "name and result are text"),
    "calls not a list": (broken("turns.0.tool_calls", {"a": 1}), "tool calls are a list"),
    "episode end unknown": (broken("finish_reason", KeyError), "finish_reason is one of done, turns, length"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_episode_is_shown_as_unreadable(case: str) -> None:
    episode, reason = MALFORMED[case]
    count = MAX_TURNS + 1 if "many" in case else 12
    shown = rollout_episode(details={"episode": episode}, token_count=count)
    assert shown is not None and shown["error"] == UNREADABLE, shown
    assert reason in shown["reason"]


def store(run: Run, details: dict[str, Any], n_tokens: int = 12) -> int:
    from webapp.experiments.services import run_record_step

    record = rollout_record(1, n_tokens=n_tokens, details=details)
    run_record_step(run_id=run.pk, step=1, max_steps=run.max_steps, metrics={}, rollouts=[record])
    return int(run.rollouts.get().pk)


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_token_view_reads_the_turns_and_the_rows_count_them(run: Run, alice: User) -> None:
    rollout_id = store(run, {"calc": {"reason": "42"}, "episode": episode_json()})

    body = client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").json()
    assert len(body["episode"]["turns"]) == 3 and body["episode"]["finish_reason"] == "done"
    assert body["details"] == {"calc": {"reason": "42"}}  # the raw copy is not sent twice
    assert body["process"] is None

    rows = client_for(alice).get(f"/runs/{run.pk}/rollouts/rows/?step=1").json()["results"]
    assert rows[0]["turns"] == 3 and "episode" not in rows[0]["details"]


@pytest.mark.django_db
def test_a_single_turn_rollout_has_no_episode_and_no_turn_count(run: Run, alice: User) -> None:
    rollout_id = store(run, {"calc": {"reason": "42"}})
    body = client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").json()
    assert body["episode"] is None
    assert (
        client_for(alice).get(f"/runs/{run.pk}/rollouts/rows/?step=1").json()["results"][0]["turns"] is None
    )


@pytest.mark.django_db
def test_spans_past_the_stored_tokens_open_as_unreadable_not_an_error(run: Run, alice: User) -> None:
    rollout_id = store(run, {"episode": episode_json()}, n_tokens=10)  # the last turn reaches token 12 of 10
    response = client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/")
    assert response.status_code == 200
    assert response.json()["episode"] == {
        "error": UNREADABLE,
        "reason": "turn 3: model span [10, 12) is out of order or outside the 10 tokens",
    }


@pytest.mark.django_db
def test_the_rest_api_passes_the_episode_through_unchanged(run: Run, alice: User) -> None:
    rollout_id = store(run, {"calc": {"reason": "42"}, "episode": episode_json()})
    client = APIClient()
    client.force_authenticate(alice)
    body = client.get(f"/api/runs/{run.pk}/rollouts/{rollout_id}/").json()
    assert body["details"]["episode"] == episode_json()


@pytest.mark.django_db
def test_an_outsider_gets_404_for_a_rollouts_turns(run: Run, bob: User) -> None:
    rollout_id = store(run, {"episode": episode_json()})
    assert client_for(bob).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").status_code == 404
