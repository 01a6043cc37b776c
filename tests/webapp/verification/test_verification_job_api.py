"""Audit and rescore jobs over HTTP: who may start and see them, the 202 answer, validation of a rescore
(the run's project, the cap, an empty run), and a finished job's result as the page reads it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.experiments.models import Run
from webapp.teams.models import Project
from webapp.verification import job_services
from webapp.verification.job_services import RESCORE_CAP, verification_job_execute
from webapp.verification.models import VerificationJob, VerifierVersion

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_readers_start_an_audit_and_get_202_with_a_queued_job(
    api: Api, bob: User, join: Join, version: VerifierVersion, role: str
) -> None:
    join(bob, role)
    resp = api(bob).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json")
    assert resp.status_code == 202, resp.json()
    job = resp.json()
    assert (job["kind"], job["status"], job["done"], job["progress"], job["result"]) == (
        "audit",
        "queued",
        0,
        0.0,
        {},
    )
    assert job["total"] > 200 and job["created_by"] == "bob"
    assert job["url"] == f"/api/verification-jobs/{job['id']}/"
    assert api(bob).get(job["url"]).json()["id"] == job["id"]


def test_a_second_click_while_the_audit_is_queued_returns_the_same_job(
    api: Api, alice: User, version: VerifierVersion
) -> None:
    first = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    second = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    assert first["id"] == second["id"] and VerificationJob.objects.count() == 1


def test_outsiders_can_neither_start_nor_see_jobs(
    api: Api, alice: User, bob: User, join: Join, version: VerifierVersion, run_with_rollouts: Run
) -> None:
    job = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    join(bob, None)
    client = api(bob)
    assert client.post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").status_code == 404
    rescore = {"run": run_with_rollouts.pk}
    assert (
        client.post(f"/api/verifier-versions/{version.pk}/rescore/", rescore, format="json").status_code
        == 404
    )
    assert client.get(f"/api/verification-jobs/{job['id']}/").status_code == 404
    assert client.get(f"/api/verifier-versions/{version.pk}/jobs/").status_code == 404


def test_a_finished_audit_returns_acceptance_per_answer_form(
    api: Api, alice: User, version: VerifierVersion
) -> None:
    job = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json").json()
    assert verification_job_execute(job_id=job["id"]) == "succeeded"
    body = api(alice).get(job["url"]).json()
    assert (body["status"], body["progress"], body["done"]) == ("succeeded", 1.0, body["total"])
    rows = {row["form"]: row for row in body["result"]["rows"]}
    assert rows["plain"]["rate"] == 1.0 and rows["frac"]["rate"] == 0.0
    assert body["result"]["total"] == sum(row["total"] for row in body["result"]["rows"]) == body["total"]


def test_a_finished_rescore_lists_the_verdicts_that_change(
    api: Api, alice: User, casefold: VerifierVersion, run_with_rollouts: Run
) -> None:
    url = f"/api/verifier-versions/{casefold.pk}/rescore/"
    job = api(alice).post(url, {"run": run_with_rollouts.pk}, format="json").json()
    assert (job["kind"], job["run"], job["limit"], job["total"]) == ("rescore", run_with_rollouts.pk, None, 4)
    verification_job_execute(job_id=job["id"])
    result = api(alice).get(job["url"]).json()["result"]
    assert (result["scored"], result["changed"], result["newly_correct"], result["newly_incorrect"]) == (
        4,
        2,
        1,
        1,
    )
    assert [(r["sample_index"], r["was_correct"], r["now_correct"]) for r in result["rows"]] == [
        (0, False, True), (2, True, False),
    ]  # fmt: skip
    assert result["rows_truncated"] is False


def test_a_rescore_limit_above_the_cap_is_refused_with_the_cap(
    api: Api, alice: User, casefold: VerifierVersion, run_with_rollouts: Run
) -> None:
    body = {"run": run_with_rollouts.pk, "limit": RESCORE_CAP + 1}
    resp = api(alice).post(f"/api/verifier-versions/{casefold.pk}/rescore/", body, format="json")
    assert resp.status_code == 400
    assert str(RESCORE_CAP) in resp.json()["message"] and "limit" in resp.json()["extra"]["fields"]
    assert not VerificationJob.objects.exists()


def test_rescoring_all_of_a_run_above_the_cap_asks_for_a_limit(
    api: Api, alice: User, casefold: VerifierVersion, run_with_rollouts: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(job_services, "RESCORE_CAP", 3)
    url = f"/api/verifier-versions/{casefold.pk}/rescore/"
    resp = api(alice).post(url, {"run": run_with_rollouts.pk}, format="json")
    assert resp.status_code == 400 and "holds 4 rollouts" in resp.json()["message"]
    newest = api(alice).post(url, {"run": run_with_rollouts.pk, "limit": 3}, format="json")
    assert newest.status_code == 202 and newest.json()["total"] == 3


def test_rescoring_a_run_without_rollouts_is_refused(
    api: Api, alice: User, casefold: VerifierVersion, run: Run
) -> None:
    resp = api(alice).post(f"/api/verifier-versions/{casefold.pk}/rescore/", {"run": run.pk}, format="json")
    assert resp.status_code == 400 and "no stored rollouts" in resp.json()["message"]


def test_rescoring_a_run_of_another_project_is_refused(
    api: Api, alice: User, run_with_rollouts: Run, version: VerifierVersion
) -> None:
    from webapp.teams.services import project_create

    other = project_create(name="Other", owner=alice)
    mine = (
        api(alice)
        .post(f"/api/projects/{other.pk}/verifiers/", {"name": "v", "verifier": "exact"}, format="json")
        .json()["versions"][0]["id"]
    )
    resp = api(alice).post(
        f"/api/verifier-versions/{mine}/rescore/", {"run": run_with_rollouts.pk}, format="json"
    )
    assert resp.status_code == 400 and "another project" in resp.json()["message"]


def test_a_versions_job_list_is_newest_first_without_results(
    api: Api, alice: User, casefold: VerifierVersion, run_with_rollouts: Run, project: Project
) -> None:
    audit = api(alice).post(f"/api/verifier-versions/{casefold.pk}/audit/", {}, format="json").json()
    verification_job_execute(job_id=audit["id"])
    rescore = (
        api(alice)
        .post(f"/api/verifier-versions/{casefold.pk}/rescore/", {"run": run_with_rollouts.pk}, format="json")
        .json()
    )
    jobs = api(alice).get(f"/api/verifier-versions/{casefold.pk}/jobs/").json()
    assert [(j["id"], j["status"]) for j in jobs] == [(rescore["id"], "queued"), (audit["id"], "succeeded")]
    assert all("result" not in j for j in jobs)
