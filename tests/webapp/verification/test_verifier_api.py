"""The verifier API by role (viewers read and use the bench; admins and owners edit; outsiders get 404),
and the bench's answers. Audit and rescore jobs: test_verification_job_api.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.teams.models import Project
from webapp.verification.models import VerifierDefinition, VerifierVersion

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


def test_an_admin_defines_a_verifier_and_gets_version_1(
    api: Api, bob: User, join: Join, project: Project
) -> None:
    join(bob, "admin")
    resp = api(bob).post(
        f"/api/projects/{project.pk}/verifiers/",
        {"name": "half", "verifier": "numeric", "params": {"rel_tol": 0.01}},
        format="json",
    )
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["versions"][0]["number"] == 1 and body["versions"][0]["params"]["rel_tol"] == 0.01
    assert body["versions"][0]["config_entry"] == {
        "name": "numeric",
        "params": body["versions"][0]["params"],
        "label": "half",
    }


def test_bad_params_come_back_in_the_one_error_shape(api: Api, alice: User, project: Project) -> None:
    resp = api(alice).post(
        f"/api/projects/{project.pk}/verifiers/",
        {"name": "x", "verifier": "math", "params": {"nope": 1}},
        format="json",
    )
    assert resp.status_code == 400
    assert "nope" in resp.json()["message"] and "params" in resp.json()["extra"]["fields"]


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_viewers_read_but_cannot_edit(
    api: Api, bob: User, join: Join, definition: VerifierDefinition, version: VerifierVersion, role: str
) -> None:
    join(bob, role)
    client = api(bob)
    assert client.get(f"/api/verifiers/{definition.pk}/").status_code == 200
    assert client.get(f"/api/verifier-versions/{version.pk}/").status_code == 200
    assert (
        client.post(
            f"/api/verifiers/{definition.pk}/versions/", {"verifier": "exact"}, format="json"
        ).status_code
        == 403
    )
    case = {"completion": "1", "reference": "1", "expected_correct": True}
    assert client.post(f"/api/verifiers/{definition.pk}/cases/", case, format="json").status_code == 403
    assert client.delete(f"/api/verifiers/{definition.pk}/").status_code == 403


def test_outsiders_get_404_everywhere(
    api: Api,
    bob: User,
    join: Join,
    project: Project,
    definition: VerifierDefinition,
    version: VerifierVersion,
) -> None:
    join(bob, None)
    client = api(bob)
    for url in (
        f"/api/projects/{project.pk}/verifiers/", f"/api/projects/{project.pk}/verifier-versions/",
        f"/api/verifiers/{definition.pk}/", f"/api/verifier-versions/{version.pk}/",
    ):  # fmt: skip
        assert client.get(url).status_code == 404, url
    bench = client.post(f"/api/verifier-versions/{version.pk}/test/", {"completion": "1"}, format="json")
    assert bench.status_code == 404


def test_the_bench_shows_verdict_extracted_answer_and_reason(
    api: Api, bob: User, join: Join, version: VerifierVersion
) -> None:
    join(bob, "viewer")
    resp = api(bob).post(
        f"/api/verifier-versions/{version.pk}/test/",
        {"completion": "42\nbecause 6*7", "reference": "42"},
        format="json",
    )
    assert resp.status_code == 200
    assert resp.json() | {"detail": None} == {
        "reward": 1.0, "correct": True, "extracted": "42", "reason": "match", "error": None, "detail": None,
    }  # fmt: skip
    wrong = api(bob).post(
        f"/api/verifier-versions/{version.pk}/test/", {"completion": "41", "reference": "42"}, format="json"
    )
    assert wrong.json()["correct"] is False and wrong.json()["reason"] == "mismatch"


def test_the_bench_reports_a_missing_reference_as_an_error(
    api: Api, alice: User, version: VerifierVersion
) -> None:
    resp = api(alice).post(f"/api/verifier-versions/{version.pk}/test/", {"completion": "42"}, format="json")
    assert resp.json()["correct"] is False and "no reference answer" in resp.json()["error"]


def test_the_registry_lists_code_with_its_parameter_schema(api: Api, alice: User) -> None:
    items = {item["name"]: item for item in api(alice).get("/api/verifier-registry/").json()}
    assert "code" in items and "memory_mb" in items["code"]["schema"]["properties"]
    assert items["math"]["defaults"]["timeout_s"] == 5.0
