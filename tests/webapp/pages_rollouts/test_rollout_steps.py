"""A rollout's steps (process rewards) for the token view: ``details["process"]`` checked against the tokens and
passed on, a malformed record shown as unreadable rather than breaking the page, and the same from an outside run
through the ingest API."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import rollout_record
from tests.webapp.ingest.helpers import batch, post, rollout, token_client
from trainer.sinks import TOKEN_CHANNELS
from webapp.experiments.models import Run
from webapp.pages.selectors_rollouts import MAX_STEPS, UNREADABLE, rollout_process, rollout_rows
from webapp.teams.models import Project

PROCESS: dict[str, Any] = {
    "spans": [[0, 2], [2, 5], [5, 6]],
    "scores": [0.9, 0.3, None],
    "blamed": 1,
    "oracle_first_wrong": 0,
    "scorer": "prm",
    "segmenter": "lines",
}


def with_process(**changes: Any) -> dict[str, Any]:
    return {"chain": {"reason": "wrong at line 1"}, "process": {**PROCESS, **changes}}


def test_a_well_formed_record_becomes_steps_over_its_tokens() -> None:
    assert rollout_process(details=with_process(), token_count=6) == {
        "steps": [
            {"start": 0, "end": 2, "score": 0.9},
            {"start": 2, "end": 5, "score": 0.3},
            {"start": 5, "end": 6, "score": None},
        ],
        "blamed": 1,
        "oracle_first_wrong": 0,
        "scorer": "prm",
        "segmenter": "lines",
        "note": "",
    }


def test_without_step_data_there_is_nothing_to_draw() -> None:
    assert rollout_process(details={"chain": {"reason": "ok"}}, token_count=6) is None
    assert rollout_process(details={}, token_count=0) is None
    assert rollout_process(details=None, token_count=3) is None


def test_optional_marks_may_be_left_out_and_names_are_bounded() -> None:
    process = {
        "spans": [[0, 3], [4, 6]],
        "scores": [1, 0.0],
        "scorer": "x" * 500,
        "segmenter": 7,
        "note": "n" * 900,
    }
    shown = rollout_process(details={"process": process}, token_count=6)
    assert shown is not None
    assert shown["blamed"] is None and shown["oracle_first_wrong"] is None
    assert shown["steps"][0] == {"start": 0, "end": 3, "score": 1.0}  # a gap (token 3) is allowed
    assert shown["scorer"] == "x" * 64 and shown["segmenter"] == "" and shown["note"] == "n" * 500


def test_up_to_the_step_bound_is_drawn() -> None:
    process = {"spans": [[k, k + 1] for k in range(MAX_STEPS)], "scores": [0.5] * MAX_STEPS}
    shown = rollout_process(details={"process": process}, token_count=MAX_STEPS)
    assert shown is not None and len(shown["steps"]) == MAX_STEPS


MALFORMED: dict[str, tuple[Any, str]] = {
    "not an object": ("spans 0-2", "not an object"),
    "spans not a list": ({**PROCESS, "spans": "0-2"}, "must be lists"),
    "scores missing": ({k: v for k, v in PROCESS.items() if k != "scores"}, "must be lists"),
    "span past the tokens": ({**PROCESS, "spans": [[0, 2], [2, 5], [5, 7]]}, "step 3: span [5, 7)"),
    "overlapping spans": ({**PROCESS, "spans": [[0, 3], [2, 5], [5, 6]]}, "step 2"),
    "spans out of order": ({**PROCESS, "spans": [[2, 5], [0, 2], [5, 6]]}, "step 2"),
    "empty span": ({**PROCESS, "spans": [[0, 2], [2, 2], [5, 6]]}, "step 2"),
    "negative start": ({**PROCESS, "spans": [[-1, 2], [2, 5], [5, 6]]}, "step 1"),
    "three numbers": ({**PROCESS, "spans": [[0, 2, 4], [2, 5], [5, 6]]}, "two token indices"),
    "float index": ({**PROCESS, "spans": [[0, 2.0], [2, 5], [5, 6]]}, "two token indices"),
    "bool index": ({**PROCESS, "spans": [[False, 2], [2, 5], [5, 6]]}, "two token indices"),
    "fewer scores": ({**PROCESS, "scores": [0.9, 0.3]}, "2 scores for 3 steps"),
    "score above 1": ({**PROCESS, "scores": [0.9, 1.5, None]}, "in [0, 1]"),
    "score a string": ({**PROCESS, "scores": [0.9, "<b>0.3</b>", None]}, "in [0, 1]"),
    "blamed past the steps": ({**PROCESS, "blamed": 3}, "blamed is not a step"),
    "oracle a string": ({**PROCESS, "oracle_first_wrong": "2"}, "oracle_first_wrong is not a step"),
    "too many steps": (
        {"spans": [[k, k + 1] for k in range(MAX_STEPS + 1)], "scores": [0.5] * (MAX_STEPS + 1)},
        f"65 steps, more than the {MAX_STEPS}",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_record_is_shown_as_unreadable(case: str) -> None:
    process, reason = MALFORMED[case]
    shown = rollout_process(details={"process": process}, token_count=MAX_STEPS + 1 if "many" in case else 6)
    assert shown is not None and shown["error"] == UNREADABLE, shown
    assert reason in shown["reason"]


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def store(run: Run, details: dict[str, Any], n_tokens: int = 6, **overrides: Any) -> int:
    from webapp.experiments.services import run_record_step

    record = rollout_record(1, n_tokens=n_tokens, details=details, **overrides)
    run_record_step(run_id=run.pk, step=1, max_steps=run.max_steps, metrics={}, rollouts=[record])
    return int(run.rollouts.get().pk)


@pytest.mark.django_db
def test_the_token_view_reads_the_steps_and_the_table_rows_leave_them_out(run: Run, alice: User) -> None:
    rollout_id = store(run, with_process(scorer="<img src=x onerror=alert(1)>"))
    body = client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").json()

    assert body["process"]["blamed"] == 1 and body["process"]["oracle_first_wrong"] == 0
    assert [s["end"] for s in body["process"]["steps"]] == [2, 5, 6]
    assert body["process"]["scorer"] == "<img src=x onerror=alert(1)>"  # data: the page sets it as text
    assert len(body["tokens"]) == 6 and set(body["channels"]) == set(TOKEN_CHANNELS)
    assert body["details"] == {"chain": {"reason": "wrong at line 1"}}  # the raw copy is not sent twice

    rows = rollout_rows(run=run, filters={"step": 1})["results"]
    assert rows[0]["details"] == {"chain": {"reason": "wrong at line 1"}}
    page = client_for(alice).get(f"/runs/{run.pk}/rollouts/rows/?step=1").json()
    assert "process" not in page["results"][0]["details"]


@pytest.mark.django_db
def test_spans_past_the_stored_tokens_open_as_unreadable_not_an_error(run: Run, alice: User) -> None:
    rollout_id = store(run, with_process(), n_tokens=4)  # spans reach token 6 of 4
    response = client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/")
    assert response.status_code == 200
    assert response.json()["process"]["error"] == UNREADABLE
    assert "outside the 4 tokens" in response.json()["process"]["reason"]
    assert client_for(alice).get(f"/runs/{run.pk}/rollouts/?rollout={rollout_id}").status_code == 200


@pytest.mark.django_db
def test_a_rollout_without_steps_has_no_process(run: Run, alice: User) -> None:
    rollout_id = store(run, {"chain": {"reason": "ok"}})
    assert client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").json()["process"] is None


@pytest.mark.django_db
def test_an_outsider_gets_404_for_a_rollouts_steps(run: Run, bob: User) -> None:
    rollout_id = store(run, with_process())
    assert client_for(bob).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").status_code == 404


@pytest.mark.django_db
def test_a_rollout_of_another_run_is_404(run: Run, alice: User) -> None:
    from webapp.experiments.services import run_launch

    rollout_id = store(run, with_process())
    other = run_launch(experiment=run.experiment, actor=alice)
    assert client_for(alice).get(f"/runs/{other.pk}/rollouts/{rollout_id}/tokens/").status_code == 404


@pytest.mark.django_db
def test_an_outside_run_sends_its_steps_through_the_ingest_api(alice: User, project: Project) -> None:
    step_score = [0.9, 0.9, 0.3, 0.3, 0.3, None]
    sent = rollout(1, n_tokens=6, details={"process": PROCESS})
    sent["token_values"]["step_score"] = step_score
    response = post(token_client(alice), batch(project.slug, rollouts=[sent]))
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    rollout_id = run.rollouts.get().pk
    body = client_for(alice).get(f"/runs/{run.pk}/rollouts/{rollout_id}/tokens/").json()
    assert body["process"]["blamed"] == 1 and [s["score"] for s in body["process"]["steps"]] == [
        0.9,
        0.3,
        None,
    ]
    assert body["channels"]["step_score"] == pytest.approx(step_score)
