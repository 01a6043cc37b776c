"""An ``openenv`` environment's ``params.base_url`` names a host the worker opens a WebSocket to: a config from the
browser or the API may name only an OpenEnv server the deployment lists in RLVR_ENVIRONMENT_SERVERS. The built-in
environments name no server and are accepted as they are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
FIELD = "config.environment.params.base_url"


def create(api: Api, user: User, project: Project, environment: dict[str, Any], name: str = "exp") -> Any:
    config = {**SMALL_CONFIG, "environment": environment}
    return api(user).post(
        f"/api/projects/{project.pk}/experiments/", {"name": name, "config": config}, format="json"
    )


def openenv(url: str) -> dict[str, Any]:
    return {"name": "openenv", "params": {"base_url": url}}


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://169.254.169.254/latest", "http://127.0.0.1:5432", "ws://envs:8000"])
def test_an_unlisted_environment_server_is_refused(api: Api, alice: User, project: Project, url: str) -> None:
    response = create(api, alice, project, openenv(url))
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["extra"]["fields"][FIELD][0] == body["message"]
    assert "RLVR_ENVIRONMENT_SERVERS" in body["message"]


@pytest.mark.django_db
@override_settings(RLVR_ENVIRONMENT_SERVERS=["http://envs:8000"])
def test_a_listed_environment_server_is_accepted(api: Api, alice: User, project: Project) -> None:
    assert create(api, alice, project, openenv("http://envs:8000/")).status_code == 201
    assert create(api, alice, project, openenv("http://envs:8001"), name="other").status_code == 400


@pytest.mark.django_db
def test_a_built_in_environment_names_no_server(api: Api, alice: User, project: Project) -> None:
    response = create(api, alice, project, {"name": "calculator", "params": {"timeout_s": 1.0}})
    assert response.status_code == 201, response.json()
    bad = create(api, alice, project, {"name": "calculator", "params": {"timeout_s": 10**6}}, name="other")
    assert bad.status_code == 400 and "timeout_s" in bad.json()["message"], bad.json()
