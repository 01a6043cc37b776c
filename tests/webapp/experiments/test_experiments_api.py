from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.models import Experiment
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def test_creating_an_experiment_returns_the_full_config(api: Api, project: Project, alice: User) -> None:
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/",
        {"name": "gsm8k", "description": "first try", "config": SMALL_CONFIG},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["name"], body["project"], body["created_by"]) == ("gsm8k", project.pk, "alice")
    assert body["config"]["rollout"]["num_generations"] == 4
    assert body["config"]["algorithm"]["loss_type"] == {"name": "dapo", "params": {}}


def test_experiments_are_listed_per_project(api: Api, experiment: Experiment, alice: User) -> None:
    names = [e["name"] for e in api(alice).get(f"/api/projects/{experiment.project_id}/experiments/").json()]
    assert names == ["addition"]


def test_an_experiment_is_edited_with_patch(api: Api, experiment: Experiment, alice: User) -> None:
    config = {**SMALL_CONFIG, "training": {**SMALL_CONFIG["training"], "max_steps": 99}}
    response = api(alice).patch(
        f"/api/experiments/{experiment.pk}/", {"description": "v2", "config": config}, format="json"
    )
    assert response.status_code == 200
    assert (response.json()["description"], response.json()["config"]["training"]["max_steps"]) == ("v2", 99)


def test_an_experiment_is_deleted(api: Api, experiment: Experiment, alice: User) -> None:
    assert api(alice).delete(f"/api/experiments/{experiment.pk}/").status_code == 204
    assert not Experiment.objects.exists()


def test_the_config_schema_is_served_for_the_form(api: Api, alice: User) -> None:
    schema = api(alice).get("/api/config-schema/").json()
    assert "training" in schema["properties"]
    assert "TrainingConfig" in schema["$defs"]
