"""The rollout browser page and its JSON rows: who may see them, and model text never emitted as markup."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import record_steps, rollout_record
from webapp.experiments.models import Run

XSS_COMPLETION = "<script>alert(1)</script> and <img src=x onerror=alert(1)>"
XSS_PROMPT = "<img src=x onerror=alert(1)> what is <script>alert(1)</script>?"


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def store_xss_rollout(run: Run) -> None:
    from webapp.experiments.services import run_record_step

    record = rollout_record(
        1,
        completion=XSS_COMPLETION,
        prompt=XSS_PROMPT,
        details={
            "regex": {"extracted": "<script>alert(1)</script>", "reason": "<img src=x onerror=alert(1)>"}
        },
    )
    run_record_step(run_id=run.pk, step=1, max_steps=run.max_steps, metrics={}, rollouts=[record])


@pytest.mark.parametrize("role", ["owner", "admin", "annotator", "viewer"])
def test_every_member_role_sees_the_rollout_browser(
    run: Run, bob: User, join: Callable[[User, str | None], User], role: str
) -> None:
    record_steps(run, range(1, 3))
    join(bob, role)
    response = client_for(bob).get(f"/runs/{run.pk}/rollouts/")
    assert response.status_code == 200
    assert b'id="tv-tokens"' in response.content


def test_an_outsider_gets_404_for_the_page_and_its_rows(run: Run, bob: User) -> None:
    record_steps(run, range(1, 2))
    assert client_for(bob).get(f"/runs/{run.pk}/rollouts/").status_code == 404
    assert client_for(bob).get(f"/runs/{run.pk}/rollouts/rows/").status_code == 404


def test_an_anonymous_visitor_is_sent_to_sign_in(run: Run) -> None:
    response = client_for(None).get(f"/runs/{run.pk}/rollouts/")
    assert response.status_code == 302
    assert response["Location"].startswith(f"/accounts/login/?next=/runs/{run.pk}/rollouts/")


def test_a_missing_run_is_404(alice: User) -> None:
    assert client_for(alice).get("/runs/999999/rollouts/").status_code == 404


def test_the_page_opens_on_the_last_step_with_rollouts(run: Run, alice: User) -> None:
    record_steps(run, range(1, 4))
    response = client_for(alice).get(f"/runs/{run.pk}/rollouts/")
    data = response.context["page_data"]
    assert data["steps"] == [1, 2, 3]
    assert data["step"] == 3
    assert {row["step"] for row in data["first_rows"]["results"]} == {3}


def test_model_text_is_never_emitted_as_markup(run: Run, alice: User) -> None:
    store_xss_rollout(run)
    html = client_for(alice).get(f"/runs/{run.pk}/rollouts/").content.decode()
    for raw in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "onerror=alert(1)>"):
        assert raw not in html
    assert "\\u003Cscript\\u003Ealert(1)\\u003C/script\\u003E" in html  # in the json_script data, escaped


def test_the_rows_filter_by_length_and_group_and_carry_verifier_details(run: Run, alice: User) -> None:
    from webapp.experiments.services import run_record_step

    records = [rollout_record(1, g, s, n_tokens=2 + 2 * s) for g in range(2) for s in range(3)]
    run_record_step(run_id=run.pk, step=1, max_steps=run.max_steps, metrics={}, rollouts=records)
    client = client_for(alice)
    body = client.get(f"/runs/{run.pk}/rollouts/rows/", {"step": 1, "length_min": 4, "length_max": 4}).json()
    assert [(r["group"], r["sample_index"], r["length"]) for r in body["results"]] == [(0, 1, 4), (1, 1, 4)]
    group = client.get(f"/runs/{run.pk}/rollouts/rows/", {"step": 1, "group": 1}).json()
    assert [r["sample_index"] for r in group["results"]] == [0, 1, 2]
    assert group["results"][0]["details"] == {"exact": {"extracted": "4"}}


def test_the_rows_answer_a_bad_filter_with_400_naming_the_field(run: Run, alice: User) -> None:
    response = client_for(alice).get(f"/runs/{run.pk}/rollouts/rows/", {"reward_min": "lots"})
    assert response.status_code == 400
    assert "reward_min" in json.loads(response.content)["fields"]


def store_groups(run: Run, step: int, groups: list[list[tuple[float | None, float | None]]]) -> None:
    """One rollout per (reward, advantage) pair, group by group."""
    from webapp.experiments.services import run_record_step

    records = [
        rollout_record(step, g, s, reward=reward, advantage=advantage, correct=None)
        for g, members in enumerate(groups)
        for s, (reward, advantage) in enumerate(members)
    ]
    run_record_step(run_id=run.pk, step=step, max_steps=run.max_steps, metrics={}, rollouts=records)


def test_a_step_opens_on_its_most_informative_group_not_a_zero_advantage_one(run: Run, alice: User) -> None:
    store_groups(run, 1, [
        [(1.0, 0.0), (1.0, 0.0)],  # every completion right: zero advantages, nothing learned
        [(1.0, 0.5), (0.0, -0.5)],
        [(1.0, 0.9), (0.0, -0.9)],  # the widest advantage spread
        [(0.0, 0.0), (0.0, 0.0)],
    ])  # fmt: skip
    client = client_for(alice)
    first = client.get(f"/runs/{run.pk}/rollouts/").context["page_data"]["first_rows"]["results"]
    assert [r["group"] for r in first] == [2, 2, 1, 1, 0, 0, 3, 3]
    rows = client.get(f"/runs/{run.pk}/rollouts/rows/", {"step": 1}).json()["results"]
    assert [r["group"] for r in rows] == [2, 2, 1, 1, 0, 0, 3, 3]


def test_groups_without_advantages_are_ordered_by_their_reward_spread(run: Run, alice: User) -> None:
    store_groups(run, 1, [[(0.5, None), (0.5, None)], [(1.0, None), (0.0, None)], [(0.7, None), (0.2, None)]])
    rows = client_for(alice).get(f"/runs/{run.pk}/rollouts/rows/", {"step": 1}).json()["results"]
    assert [r["group"] for r in rows] == [1, 1, 2, 2, 0, 0]


def test_the_order_of_groups_comes_from_whole_groups_even_when_a_filter_hides_some_rows(
    run: Run, alice: User
) -> None:
    store_groups(run, 1, [[(1.0, 0.1), (0.9, -0.1)], [(1.0, 0.8), (0.0, -0.8)]])
    rows = (
        client_for(alice)
        .get(f"/runs/{run.pk}/rollouts/rows/", {"step": 1, "reward_min": 0.95})
        .json()["results"]
    )
    assert [(r["group"], r["sample_index"]) for r in rows] == [(1, 0), (0, 0)]


@pytest.mark.parametrize("field", ["page", "group", "length_min"])
def test_a_number_past_the_database_range_is_a_400_naming_it(run: Run, alice: User, field: str) -> None:
    record_steps(run, range(1, 2))
    response = client_for(alice).get(f"/runs/{run.pk}/rollouts/rows/", {field: 10**30})
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {field}


def test_a_step_past_the_database_range_in_the_address_shows_no_rows(run: Run, alice: User) -> None:
    record_steps(run, range(1, 2))
    response = client_for(alice).get(f"/runs/{run.pk}/rollouts/", {"step": 10**30, "rollout": 10**30})
    assert response.status_code == 200
    assert response.context["page_data"]["first_rows"]["results"] == []
