"""Every API error has one shape: {"message": str, "extra": {...}}; validation errors name their fields."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.models import Experiment, Run
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def test_an_invalid_config_is_a_400_naming_the_field_path(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "training": {"learning_rate": -0.001}}
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "bad", "config": config}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "extra"}
    assert "training.learning_rate" in body["message"]
    assert body["extra"]["fields"] == {"config.training.learning_rate": ["Input should be greater than 0"]}


def test_several_config_errors_are_all_reported(api: Api, project: Project, alice: User) -> None:
    config = {"training": {"learning_rate": 0, "max_steps": 0}, "rollout": {"temperature": "hot"}}
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "bad", "config": config}, format="json"
    )
    assert set(response.json()["extra"]["fields"]) == {
        "config.training.learning_rate",
        "config.training.max_steps",
        "config.rollout.temperature",
    }
    assert "(and 2 more)" in response.json()["message"]


def test_a_missing_field_is_named(api: Api, project: Project, alice: User) -> None:
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"config": {}}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "message": "name: This field is required.",
        "extra": {"fields": {"name": ["This field is required."]}},
    }


def test_a_bad_query_parameter_is_named(api: Api, run: Run, alice: User) -> None:
    response = api(alice).get(f"/api/runs/{run.pk}/rollouts/?reward_min=lots")
    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["reward_min"]


def test_malformed_json_is_a_400_in_the_same_shape(api: Api, project: Project, alice: User) -> None:
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", "{oops", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("JSON parse error")
    assert response.json()["extra"] == {}


def test_no_credentials_is_a_401_in_the_same_shape(api: Api, db: None) -> None:
    response = api(None).get("/api/projects/")
    assert response.status_code == 401
    assert response.json() == {"message": "Authentication credentials were not provided.", "extra": {}}
    assert response["WWW-Authenticate"] == "Token"


def test_a_missing_object_is_a_404_in_the_same_shape(api: Api, alice: User) -> None:
    assert api(alice).get("/api/runs/999999/").json() == {"message": "Not found.", "extra": {}}


def test_a_forbidden_action_says_which_role_it_needs(
    api: Api, experiment: Experiment, join: Callable[[User, str | None], User], bob: User
) -> None:
    join(bob, "viewer")
    response = api(bob).post(f"/api/experiments/{experiment.pk}/runs/")
    assert response.status_code == 403
    assert response.json()["message"].startswith("This needs the admin role (or higher) in project 'lab'")


def test_a_state_conflict_is_a_409(api: Api, run: Run, alice: User) -> None:
    Run.objects.filter(pk=run.pk).update(status="succeeded")
    response = api(alice).post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 409
    assert response.json() == {
        "message": f"Run {run.pk} has already finished (succeeded); there is nothing to cancel.",
        "extra": {},
    }
