"""Reward model and Secrets pages by role: members read, owners and admins get the forms, outsiders get 404; a
secret saved through the page is never shown; names are escaped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.rewards.helpers import SECRET_VALUE, judge_params
from webapp.rewards.models import ProjectSecret, RewardModel, RewardModelVersion
from webapp.rewards.services import reward_model_create, version_create_scalar
from webapp.teams.models import Project

Join = Callable[[User, str | None], User]


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def version(reward_model: RewardModel, alice: User, rm_folder: Path) -> RewardModelVersion:
    return version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))


def urls(project: Project, reward_model: RewardModel, version: RewardModelVersion) -> list[str]:
    return [
        f"/projects/{project.pk}/reward-models/",
        f"/reward-models/{reward_model.pk}/",
        f"/reward-model-versions/{version.pk}/",
        f"/projects/{project.pk}/secrets/",
    ]


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_members_read_every_page_without_forms(
    bob: User, join: Join, project: Project, reward_model: RewardModel, version: RewardModelVersion, role: str
) -> None:
    join(bob, role)
    client = client_for(bob)
    for url in urls(project, reward_model, version):
        response = client.get(url)
        assert response.status_code == 200, url
        assert 'id="secret-form"' not in response.content.decode()
        assert 'id="rm-judge-form"' not in response.content.decode()


def test_outsiders_get_404(
    bob: User, project: Project, reward_model: RewardModel, version: RewardModelVersion
) -> None:
    client = client_for(bob)
    for url in urls(project, reward_model, version):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/projects/{project.pk}/secrets/", {"name": "K", "value": "v"}).status_code == 404
    assert not ProjectSecret.objects.exists()


def test_the_version_page_shows_the_config_entry_as_yaml_with_the_weight_explained(
    alice: User, version: RewardModelVersion
) -> None:
    body = client_for(alice).get(f"/reward-model-versions/{version.pk}/").content.decode()
    assert "verifiers:" in body and f"model: rm:{version.pk}" in body and "name: reward_model" in body
    assert "algorithm.reward_weights" in body


def test_a_secret_saved_on_the_page_is_never_shown(alice: User, project: Project) -> None:
    client = client_for(alice)
    response = client.post(
        f"/projects/{project.pk}/secrets/", {"name": "OPENAI_KEY", "value": SECRET_VALUE}, follow=True
    )
    body = response.content.decode()
    assert response.status_code == 200 and "OPENAI_KEY" in body and SECRET_VALUE not in body
    refused = client.post(
        f"/projects/{project.pk}/secrets/", {"name": "OPENAI_KEY", "value": SECRET_VALUE * 300}
    )
    assert SECRET_VALUE not in refused.content.decode()
    assert ProjectSecret.objects.filter(project=project, name="OPENAI_KEY").exists()


def test_the_page_names_the_secrets_to_set_again(
    alice: User, project: Project, secret: ProjectSecret, settings: SettingsWrapper
) -> None:
    settings.SECRET_KEY = "a-rotated-secret-key-" + "z" * 40
    body = client_for(alice).get(f"/projects/{project.pk}/secrets/").content.decode()
    assert 'id="secrets-unreadable"' in body and "OPENAI_KEY" in body and "Set them again" in body


def test_a_judge_version_from_the_page(
    alice: User, reward_model: RewardModel, judges_allowed: str, secret: ProjectSecret
) -> None:
    params = judge_params()
    response = client_for(alice).post(
        f"/reward-models/{reward_model.pk}/",
        {"kind": "judge", "base_url": params["base_url"], "model": params["model"], "api_key_secret": "OPENAI_KEY",
         "parse_kind": "verdict", "prompt_template": "", "params": '{"concurrency": 2}', "note": "first"},
    )  # fmt: skip
    version = RewardModelVersion.objects.get(reward_model=reward_model)
    assert response.status_code == 302 and response["Location"] == f"/reward-model-versions/{version.pk}/"
    assert version.params["parse"]["kind"] == "verdict" and version.params["concurrency"] == 2


def test_names_are_escaped(alice: User, project: Project) -> None:
    reward_model_create(project=project, actor=alice, name="<script>alert(1)</script>")
    body = client_for(alice).get(f"/projects/{project.pk}/reward-models/").content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
