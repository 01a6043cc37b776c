"""Reward models over the API by role: every member reads, owners and admins write, outsiders get 404; versions
come back with the config entry to use, and a model a run scored with cannot be deleted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from tests.webapp.rewards.helpers import judge_params
from webapp.experiments.models import Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.rewards.models import ProjectSecret, RewardModel
from webapp.rewards.services import version_create_scalar
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


@pytest.mark.parametrize("role", ["viewer", "annotator", "admin"])
def test_members_read_reward_models_and_versions(
    api: Api, alice: User, bob: User, join: Join, project: Project, reward_model: RewardModel, rm_folder: Path,
    role: str,
) -> None:  # fmt: skip
    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    join(bob, role)
    client = api(bob)
    assert client.get(f"/api/projects/{project.pk}/reward-models/").json()[0]["name"] == "chain RM"
    detail = client.get(f"/api/reward-models/{reward_model.pk}/").json()
    assert detail["versions"][0]["config_entry"]["params"]["model"] == f"rm:{version.pk}"
    listed = client.get(f"/api/projects/{project.pk}/reward-model-versions/").json()
    assert [(v["reward_model_name"], v["number"], v["kind"]) for v in listed] == [("chain RM", 1, "scalar")]
    assert client.get(f"/api/reward-model-versions/{version.pk}/").status_code == 200


def test_outsiders_get_404_everywhere(
    api: Api, alice: User, bob: User, project: Project, reward_model: RewardModel, rm_folder: Path
) -> None:
    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    client = api(bob)
    for url in (
        f"/api/projects/{project.pk}/reward-models/",
        f"/api/projects/{project.pk}/reward-model-versions/",
        f"/api/reward-models/{reward_model.pk}/",
        f"/api/reward-models/{reward_model.pk}/versions/",
        f"/api/reward-model-versions/{version.pk}/",
        f"/api/projects/{project.pk}/secrets/",
    ):
        assert client.get(url).status_code == 404, url
    assert (
        client.post(f"/api/projects/{project.pk}/reward-models/", {"name": "x"}, format="json").status_code
        == 404
    )
    assert client.delete(f"/api/reward-models/{reward_model.pk}/").status_code == 404


@pytest.mark.parametrize(("role", "status"), [("viewer", 403), ("annotator", 403), ("admin", 201)])
def test_only_owners_and_admins_create_reward_models_and_versions(
    api: Api, bob: User, join: Join, project: Project, reward_model: RewardModel, rm_folder: Path, role: str,
    status: int,
) -> None:  # fmt: skip
    join(bob, role)
    client = api(bob)
    created = client.post(f"/api/projects/{project.pk}/reward-models/", {"name": "judge"}, format="json")
    assert created.status_code == status
    version = client.post(
        f"/api/reward-models/{reward_model.pk}/versions/",
        {"kind": "scalar", "model": "chain-rm", "params": {"micro_batch_size": 4}}, format="json",
    )  # fmt: skip
    assert version.status_code == status
    if status == 201:
        assert version.json()["params"]["micro_batch_size"] == 4 and version.json()["origin"] == "folder"


def test_a_refused_version_answers_in_the_error_shape(
    api: Api, alice: User, reward_model: RewardModel, judges_allowed: str
) -> None:
    response = api(alice).post(
        f"/api/reward-models/{reward_model.pk}/versions/",
        {"kind": "judge", "params": judge_params(api_key_secret="MISSING")}, format="json",
    )  # fmt: skip
    assert response.status_code == 400
    body = response.json()
    assert "not a secret of this project" in body["message"]
    assert list(body["extra"]["fields"]) == ["params.api_key_secret"]


def test_a_judge_version_through_the_api(
    api: Api, alice: User, reward_model: RewardModel, judges_allowed: str, secret: ProjectSecret
) -> None:
    response = api(alice).post(
        f"/api/reward-models/{reward_model.pk}/versions/",
        {"kind": "judge", "params": judge_params()},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["config_entry"]["name"] == "judge"


def test_a_reward_model_a_run_scored_with_is_kept(
    api: Api, alice: User, project: Project, reward_model: RewardModel, rm_folder: Path
) -> None:
    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    config = {**SMALL_CONFIG, "verifiers": [{"name": "exact"}, version.config_entry]}
    experiment = experiment_create(project=project, actor=alice, name="on the RM", config=config)
    run: Run = run_launch(experiment=experiment, actor=alice)
    assert run.pk
    response = api(alice).delete(f"/api/reward-models/{reward_model.pk}/")
    assert response.status_code == 409 and "rename it instead" in response.json()["message"]
    other = RewardModel.objects.create(project=project, name="unused")
    assert api(alice).delete(f"/api/reward-models/{other.pk}/").status_code == 204


def test_no_answer_or_page_holds_a_server_folder(
    api: Api, alice: User, project: Project, reward_model: RewardModel, rm_folder: Path
) -> None:
    from django.test import Client

    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    client, pages = api(alice), Client()
    pages.force_login(alice)
    bodies = [
        client.get(url).content.decode()
        for url in (
            f"/api/reward-models/{reward_model.pk}/",
            f"/api/projects/{project.pk}/reward-model-versions/",
            f"/api/reward-model-versions/{version.pk}/",
        )
    ]
    bodies += [
        pages.get(url).content.decode()
        for url in (f"/reward-models/{reward_model.pk}/", f"/reward-model-versions/{version.pk}/")
    ]
    assert all(str(rm_folder.resolve()) not in body for body in bodies)
    assert (
        client.get(f"/api/reward-model-versions/{version.pk}/").json()["params"]["model"]
        == f"rm:{version.pk}"
    )
