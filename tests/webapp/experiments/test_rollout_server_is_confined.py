"""rollout.vllm_server_url names a host the worker sends requests (and weight paths) to: a config from the
browser or the API may name only a rollout server the deployment lists in RLVR_ROLLOUT_SERVERS."""

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
FIELD = "config.rollout.vllm_server_url"


def create(api: Api, user: User, project: Project, url: str) -> Any:
    rollout = {
        **SMALL_CONFIG.get("rollout", {}),
        "engine": "vllm",
        "vllm_mode": "server",
        "vllm_server_url": url,
    }
    config = {**SMALL_CONFIG, "rollout": rollout}
    return api(user).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "exp", "config": config}, format="json"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest", "http://127.0.0.1:5432", "http://rollout:8100"]
)
def test_an_unlisted_rollout_server_is_refused(api: Api, alice: User, project: Project, url: str) -> None:
    response = create(api, alice, project, url)
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["extra"]["fields"][FIELD][0] == body["message"]
    assert "RLVR_ROLLOUT_SERVERS" in body["message"] and "starts its own server" in body["message"]


@pytest.mark.django_db
@override_settings(RLVR_ROLLOUT_SERVERS=["http://rollout:8100"])
def test_a_listed_rollout_server_is_accepted(api: Api, alice: User, project: Project) -> None:
    assert create(api, alice, project, "http://rollout:8100/").status_code == 201
    assert create(api, alice, project, "http://rollout:8101").status_code == 400
