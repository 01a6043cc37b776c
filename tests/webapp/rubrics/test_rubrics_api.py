"""The rubric API per role: viewers and annotators read, admins and owners edit, outsiders get 404."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.rubrics.models import Rubric
from webapp.rubrics.services import rubric_create
from webapp.teams.models import Project

Join = Callable[[User, str | None], User]


def client_for(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def rubric(project: Project, alice: User, rubric_payload: dict[str, Any]) -> Rubric:
    return rubric_create(project=project, actor=alice, **rubric_payload)


def test_the_owner_creates_a_rubric_and_gets_its_trainer_config(
    project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    resp = client_for(alice).post(f"/api/projects/{project.pk}/rubrics/", rubric_payload, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert [c["name"] for c in body["criteria"]] == ["correct", "boxed", "clarity", "tone"]
    assert body["config"]["aggregation"] == "rank" and len(body["config"]["criteria"]) == 4
    assert body["created_by"] == "alice"


def test_validation_errors_come_back_per_field(
    project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    rubric_payload["criteria"][1]["rule"]["params"] = {"kind": "tags"}
    rubric_payload["criteria"][0]["scale"] = "stars"
    resp = client_for(alice).post(f"/api/projects/{project.pk}/rubrics/", rubric_payload, format="json")
    assert resp.status_code == 400
    assert "criteria.0.scale" in resp.json()["extra"]["fields"]  # a type error, from the serializer
    rubric_payload["criteria"][0]["scale"] = "binary"
    resp = client_for(alice).post(f"/api/projects/{project.pk}/rubrics/", rubric_payload, format="json")
    assert resp.status_code == 400
    assert "needs a non-empty 'tags' list" in resp.json()["extra"]["fields"]["criteria.1.rule"][0]


@pytest.mark.parametrize("role", ["viewer", "annotator", "admin", "owner"])
def test_every_member_reads_rubrics(
    rubric: Rubric, project: Project, bob: User, join: Join, role: str
) -> None:
    join(bob, role)
    client = client_for(bob)
    listed = client.get(f"/api/projects/{project.pk}/rubrics/")
    assert listed.status_code == 200 and [r["name"] for r in listed.json()] == [rubric.name]
    assert listed.json()[0]["criteria_count"] == 4
    assert client.get(f"/api/rubrics/{rubric.pk}/").json()["criteria"][2]["scorer"] == "judge"


@pytest.mark.parametrize(
    ("role", "allowed"), [("viewer", False), ("annotator", False), ("admin", True), ("owner", True)]
)
def test_only_admins_and_owners_edit(
    rubric: Rubric,
    project: Project,
    bob: User,
    join: Join,
    rubric_payload: dict[str, Any],
    role: str,
    allowed: bool,
) -> None:
    join(bob, role)
    client = client_for(bob)
    created = client.post(
        f"/api/projects/{project.pk}/rubrics/", {**rubric_payload, "name": "other"}, format="json"
    )
    replaced = client.put(f"/api/rubrics/{rubric.pk}/", {**rubric_payload, "name": "renamed"}, format="json")
    assert (created.status_code, replaced.status_code) == ((201, 200) if allowed else (403, 403))
    deleted = client.delete(f"/api/rubrics/{rubric.pk}/")
    assert deleted.status_code == (204 if allowed else 403)
    assert Rubric.objects.filter(pk=rubric.pk).exists() is not allowed


def test_outsiders_get_404_for_everything(
    rubric: Rubric, project: Project, charlie: User, rubric_payload: dict[str, Any]
) -> None:
    client = client_for(charlie)
    assert client.get(f"/api/projects/{project.pk}/rubrics/").status_code == 404
    assert (
        client.post(f"/api/projects/{project.pk}/rubrics/", rubric_payload, format="json").status_code == 404
    )
    assert client.get(f"/api/rubrics/{rubric.pk}/").status_code == 404
    assert client.put(f"/api/rubrics/{rubric.pk}/", rubric_payload, format="json").status_code == 404
    assert client.delete(f"/api/rubrics/{rubric.pk}/").status_code == 404


def test_anonymous_users_are_refused(rubric: Rubric) -> None:
    assert APIClient().get(f"/api/rubrics/{rubric.pk}/").status_code in (401, 403)


def test_a_put_reorders_criteria(rubric: Rubric, alice: User, rubric_payload: dict[str, Any]) -> None:
    rubric_payload["criteria"] = rubric_payload["criteria"][::-1]
    resp = client_for(alice).put(f"/api/rubrics/{rubric.pk}/", rubric_payload, format="json")
    assert [c["name"] for c in resp.json()["criteria"]] == ["tone", "clarity", "boxed", "correct"]
    assert [c["position"] for c in resp.json()["criteria"]] == [0, 1, 2, 3]


def test_an_experiment_with_the_rubric_section_validates(
    rubric: Rubric, project: Project, alice: User
) -> None:
    from tests.webapp.helpers import SMALL_CONFIG

    section = client_for(alice).get(f"/api/rubrics/{rubric.pk}/").json()["config"]
    section["judge_model"] = {"name_or_path": "tiny:addition"}  # a judged criterion names its judge
    config = {**SMALL_CONFIG, "rubric": section}
    resp = client_for(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "with rubric", "config": config}, format="json"
    )
    assert resp.status_code == 201, resp.json()
    assert resp.json()["config"]["rubric"]["criteria"][0]["rule"]["type"] == "verifier"
