"""The verifier API by role (viewers read and use the bench; admins and owners edit; outsiders get 404),
and the bench, audit and rescore answers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import rollout_record
from webapp.experiments.models import Run
from webapp.experiments.services import run_record_step
from webapp.teams.models import Project
from webapp.verification.models import VerifierDefinition, VerifierVersion

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


def test_an_admin_defines_a_verifier_and_gets_version_1(api: Api, bob: User, join: Join, project: Project) -> None:
    join(bob, "admin")
    resp = api(bob).post(
        f"/api/projects/{project.pk}/verifiers/",
        {"name": "half", "verifier": "numeric", "params": {"rel_tol": 0.01}},
        format="json",
    )
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["versions"][0]["number"] == 1 and body["versions"][0]["params"]["rel_tol"] == 0.01
    assert body["versions"][0]["config_entry"] == {"name": "numeric", "params": body["versions"][0]["params"], "label": "half"}


def test_bad_params_come_back_in_the_one_error_shape(api: Api, alice: User, project: Project) -> None:
    resp = api(alice).post(
        f"/api/projects/{project.pk}/verifiers/", {"name": "x", "verifier": "math", "params": {"nope": 1}}, format="json"
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
    assert client.post(f"/api/verifiers/{definition.pk}/versions/", {"verifier": "exact"}, format="json").status_code == 403
    case = {"completion": "1", "reference": "1", "expected_correct": True}
    assert client.post(f"/api/verifiers/{definition.pk}/cases/", case, format="json").status_code == 403
    assert client.delete(f"/api/verifiers/{definition.pk}/").status_code == 403


def test_outsiders_get_404_everywhere(
    api: Api, bob: User, join: Join, project: Project, definition: VerifierDefinition, version: VerifierVersion
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
        f"/api/verifier-versions/{version.pk}/test/", {"completion": "42\nbecause 6*7", "reference": "42"}, format="json"
    )
    assert resp.status_code == 200
    assert resp.json() | {"detail": None} == {
        "reward": 1.0, "correct": True, "extracted": "42", "reason": "match", "error": None, "detail": None,
    }  # fmt: skip
    wrong = api(bob).post(f"/api/verifier-versions/{version.pk}/test/", {"completion": "41", "reference": "42"}, format="json")
    assert wrong.json()["correct"] is False and wrong.json()["reason"] == "mismatch"


def test_the_bench_reports_a_missing_reference_as_an_error(api: Api, alice: User, version: VerifierVersion) -> None:
    resp = api(alice).post(f"/api/verifier-versions/{version.pk}/test/", {"completion": "42"}, format="json")
    assert resp.json()["correct"] is False and "no reference answer" in resp.json()["error"]


def test_the_audit_returns_acceptance_per_answer_form(api: Api, alice: User, version: VerifierVersion) -> None:
    report = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    rows = {row["form"]: row for row in report["rows"]}
    assert rows["plain"]["rate"] == 1.0 and rows["frac"]["rate"] == 0.0
    assert report["total"] == sum(row["total"] for row in report["rows"]) > 200


def test_rescoring_a_run_lists_the_verdicts_that_change(
    api: Api, alice: User, run: Run, project: Project
) -> None:
    """The run's verifier said correct/incorrect; a case-insensitive exact check flips two of the verdicts."""
    records = [
        rollout_record(1, 0, 0, completion="Paris", answer="paris", correct=False),
        rollout_record(1, 0, 1, completion="paris", answer="paris", correct=True),
        rollout_record(1, 0, 2, completion="Lyon", answer="paris", correct=True),
        rollout_record(1, 0, 3, completion="Lyon", answer="paris", correct=False),
    ]
    run_record_step(run_id=run.pk, step=1, max_steps=2, metrics={}, rollouts=records)
    created = api(alice).post(
        f"/api/projects/{project.pk}/verifiers/",
        {"name": "casefold", "verifier": "exact", "params": {"case_sensitive": False}},
        format="json",
    ).json()
    version_id = created["versions"][0]["id"]
    body = api(alice).post(f"/api/verifier-versions/{version_id}/rescore/", {"run": run.pk}, format="json").json()
    assert (body["scored"], body["changed"], body["newly_correct"], body["newly_incorrect"]) == (4, 2, 1, 1)
    assert [(r["sample_index"], r["was_correct"], r["now_correct"]) for r in body["rows"]] == [(0, False, True), (2, True, False)]


def test_rescoring_a_run_of_another_project_is_refused(
    api: Api, alice: User, run: Run, version: VerifierVersion
) -> None:
    from webapp.teams.services import project_create

    other = project_create(name="Other", owner=alice)
    mine = api(alice).post(
        f"/api/projects/{other.pk}/verifiers/", {"name": "v", "verifier": "exact"}, format="json"
    ).json()["versions"][0]["id"]
    resp = api(alice).post(f"/api/verifier-versions/{mine}/rescore/", {"run": run.pk}, format="json")
    assert resp.status_code == 400 and "another project" in resp.json()["message"]


def test_the_registry_lists_code_with_its_parameter_schema(api: Api, alice: User) -> None:
    items = {item["name"]: item for item in api(alice).get("/api/verifier-registry/").json()}
    assert "code" in items and "memory_mb" in items["code"]["schema"]["properties"]
    assert items["math"]["defaults"]["timeout_s"] == 5.0
