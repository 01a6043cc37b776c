"""A run's retention policy: given at launch (POST /api/runs/ ``retention``), changed later (PATCH
/api/runs/<id>/retention/, admins and owners), defaulting to settings.RLVR_ROLLOUT_RETENTION; a wrong
policy is a 400 in the API's one error shape, naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from pytest_django import Settings
from rest_framework.test import APIClient

from tests.webapp.helpers import record_steps
from webapp.core.errors import InvalidInput
from webapp.experiments.models import Experiment, Rollout, Run
from webapp.experiments.retention import default_retention, describe_retention, parse_retention

Api = Callable[[User | None], APIClient]


def test_a_policy_is_stored_with_its_defaults_filled_in() -> None:
    assert parse_retention({}) == {"keep": "all"}
    assert parse_retention({"keep": "every_n_steps", "every_n_steps": 10}) == {
        "keep": "every_n_steps", "every_n_steps": 10, "recent_steps": 10,
    }  # fmt: skip
    assert (
        parse_retention({"keep": "sample_per_step", "sample_per_step": 4, "recent_steps": 0})["recent_steps"]
        == 0
    )


@pytest.mark.parametrize(
    ("policy", "field", "words"),
    [
        ({"keep": "some"}, "retention.keep", "'all', 'every_n_steps' or 'sample_per_step'"),
        ({"keep": "every_n_steps"}, "retention.every_n_steps", "needs every_n_steps"),
        (
            {"keep": "every_n_steps", "every_n_steps": 0},
            "retention.every_n_steps",
            "greater than or equal to 1",
        ),
        (
            {"keep": "every_n_steps", "every_n_steps": 10**6},
            "retention.every_n_steps",
            "less than or equal to 100000",
        ),
        ({"keep": "every_n_steps", "every_n_steps": "10"}, "retention.every_n_steps", "valid integer"),
        ({"keep": "every_n_steps", "every_n_steps": 2.0}, "retention.every_n_steps", "valid integer"),
        (
            {"keep": "sample_per_step", "sample_per_step": 5000},
            "retention.sample_per_step",
            "less than or equal to 4096",
        ),
        (
            {"keep": "sample_per_step", "sample_per_step": 4, "recent_steps": -1},
            "retention.recent_steps",
            "greater than",
        ),
        (
            {"keep": "sample_per_step", "sample_per_step": 4, "every_n_steps": 2},
            "retention.every_n_steps",
            "only read with",
        ),
        ({"keep": "all", "recent_steps": 5}, "retention.recent_steps", "leave it out"),
        ({"keep": "all", "keep_forever": True}, "retention.keep_forever", "Extra inputs"),
        (["all"], "retention", "must be an object"),
    ],
)
def test_a_wrong_policy_names_its_field(policy: Any, field: str, words: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_retention(policy)
    assert field in caught.value.fields and words in " ".join(caught.value.fields[field])


def test_the_default_comes_from_the_setting_and_a_bad_one_says_so(settings: Settings) -> None:
    settings.RLVR_ROLLOUT_RETENTION = {"keep": "every_n_steps", "every_n_steps": 5}
    assert default_retention()["every_n_steps"] == 5
    settings.RLVR_ROLLOUT_RETENTION = {"keep": "every_n_steps"}
    with pytest.raises(ImproperlyConfigured, match=r"RLVR_ROLLOUT_RETENTION\.every_n_steps"):
        default_retention()


def test_a_run_is_launched_with_the_policy_it_is_given(api: Api, experiment: Experiment, alice: User) -> None:
    policy = {"keep": "sample_per_step", "sample_per_step": 8, "recent_steps": 20}
    body = (
        api(alice)
        .post("/api/runs/", {"experiment": experiment.pk, "retention": policy}, format="json")
        .json()
    )
    assert body["retention"] == policy and Run.objects.get(pk=body["id"]).retention == policy


def test_a_run_launched_without_one_gets_the_servers_default(
    api: Api, experiment: Experiment, alice: User, settings: Settings
) -> None:
    settings.RLVR_ROLLOUT_RETENTION = {"keep": "every_n_steps", "every_n_steps": 50}
    body = api(alice).post("/api/runs/", {"experiment": experiment.pk}, format="json").json()
    assert body["retention"] == {"keep": "every_n_steps", "every_n_steps": 50, "recent_steps": 10}


def test_a_launch_with_a_wrong_policy_is_a_400_in_the_one_error_shape(
    api: Api, experiment: Experiment, alice: User
) -> None:
    response = api(alice).post(
        "/api/runs/",
        {"experiment": experiment.pk, "retention": {"keep": "every_n_steps", "every_n_steps": -3}},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "extra"} and list(body["extra"]["fields"]) == ["retention.every_n_steps"]
    assert body["message"].startswith("Invalid retention policy: retention.every_n_steps:")
    assert not Run.objects.exists()


def test_an_admin_changes_a_runs_policy_and_what_it_lets_go_is_deleted(
    api: Api, run: Run, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    record_steps(run, range(1, 7))
    policy = {"keep": "every_n_steps", "every_n_steps": 2, "recent_steps": 1}
    with django_capture_on_commit_callbacks(execute=True):
        response = api(alice).patch(f"/api/runs/{run.pk}/retention/", {"retention": policy}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "retention": policy, "deleted_rollouts": 4 * 3, "description": describe_retention(policy),
    }  # fmt: skip
    assert sorted(set(Rollout.objects.filter(run=run).values_list("step", flat=True))) == [2, 4, 6]
    assert run.events.filter(kind="retention").exists()


def test_a_wrong_policy_in_a_patch_is_a_400_and_changes_nothing(api: Api, run: Run, alice: User) -> None:
    response = api(alice).patch(
        f"/api/runs/{run.pk}/retention/", {"retention": {"keep": "sample_per_step"}}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["retention.sample_per_step"]
    run.refresh_from_db()
    assert run.retention == {"keep": "all"}


@pytest.mark.parametrize(
    ("role", "status"), [("viewer", 403), ("annotator", 403), ("admin", 200), (None, 404)]
)
def test_only_admins_and_owners_change_a_policy(
    api: Api, run: Run, bob: User, join: Callable[[User, str | None], User], role: str | None, status: int
) -> None:
    join(bob, role)
    response = api(bob).patch(f"/api/runs/{run.pk}/retention/", {"retention": {"keep": "all"}}, format="json")
    assert response.status_code == status
    if status != 200:
        assert set(response.json()) == {"message", "extra"}


def test_the_run_page_shows_the_policy(run: Run, alice: User) -> None:
    from django.test import Client

    run.retention = {"keep": "every_n_steps", "every_n_steps": 10, "recent_steps": 20}
    run.save(update_fields=["retention"])
    client = Client()
    client.force_login(alice)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "The rollouts of every 10th step, the newest 20 steps whole" in page
