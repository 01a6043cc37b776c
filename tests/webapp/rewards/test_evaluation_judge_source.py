"""A judge as an evaluated source: its endpoint must be on the allow-list and its API key a project secret; on the
worker the secret is provided to the scoring process, and an endpoint that answers nothing gives absent scores
(counted and left out, never 0), with the key's value nowhere in the stored job or its exports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.rewards.helpers import SECRET_VALUE
from webapp.rewards.models import ProjectSecret, RewardJob
from webapp.teams.models import Project
from workers.tasks_reward_eval import run_reward_evaluation

Api = Callable[[User | None], APIClient]
CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, every call is refused at once


@pytest.fixture(autouse=True)
def _settings(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False
    settings.RLVR_JUDGE_ENDPOINTS = [CLOSED]


def _judge(**params: Any) -> dict[str, Any]:
    return {"name": "judge", "label": "judge", "params": {"base_url": CLOSED, "model": "m", "api_key_secret": "OPENAI_KEY",
            "timeout_s": 2, "retries": 0, **params}}  # fmt: skip


def test_an_endpoint_off_the_allow_list_is_refused_at_its_field(
    api: Api, alice: User, project: Project
) -> None:
    body = {"sources": [_judge(base_url="http://elsewhere:8000/v1")], "audit": True}
    resp = api(alice).post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")
    assert resp.status_code == 400 and "sources.0.params.base_url" in resp.json()["extra"]["fields"]


def test_an_unreachable_judge_is_absent_everywhere_and_its_key_never_stored(
    api: Api, alice: User, project: Project, secret: ProjectSecret
) -> None:
    body = {"sources": [{"name": "chain_arithmetic"}, _judge()], "audit": True, "audit_problems": 1}
    created = api(alice).post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")
    assert created.status_code == 202, created.json()
    job_id = created.json()["id"]
    assert run_reward_evaluation.apply(args=(job_id,)).get() == "succeeded"
    job = RewardJob.objects.get(pk=job_id)
    verifier, judge = job.result["sources"]
    assert judge["audit"]["absent"] == 16 and judge["audit"]["fpr"] is None  # all absent: no rate, not 0
    assert verifier["audit"]["fpr"] == 0.0
    client = api(alice)
    seen = [str(job.config), str(job.result), job.error, client.get(f"/api/reward-evaluations/{job_id}/").content.decode(),
            client.get(f"/api/reward-evaluations/{job_id}/export/csv/").content.decode(),
            client.get(f"/api/reward-evaluations/{job_id}/export/json/").content.decode()]  # fmt: skip
    assert not any(SECRET_VALUE in text for text in seen)


def test_a_missing_secret_fails_the_job_naming_it(
    api: Api, alice: User, project: Project, secret: ProjectSecret
) -> None:
    body = {"sources": [_judge()], "audit": True, "audit_problems": 1}
    job_id = (
        api(alice).post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json").json()["id"]
    )
    secret.delete()
    assert run_reward_evaluation.apply(args=(job_id,)).get() == "failed"
    assert "OPENAI_KEY" in RewardJob.objects.get(pk=job_id).error
