"""Reward-source evaluations over HTTP: who may start, see and cancel them, validation of every part (each error at
its field), saved versions resolved to config entries, and the CSV/JSON exports of a finished one."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from webapp.experiments.models import Run
from webapp.rewards.evaluation_services import evaluation_finish
from webapp.rewards.models import RewardJob, RewardModel
from webapp.rewards.services import version_create_scalar
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]

BODY: dict[str, Any] = {"sources": [{"name": "chain_arithmetic"}], "audit": True, "audit_problems": 2}


@pytest.fixture(autouse=True)
def _no_queue(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False


def _url(project: Project) -> str:
    return f"/api/projects/{project.pk}/reward-evaluations/"


@pytest.mark.parametrize("role", ["viewer", "annotator", "admin"])
def test_members_start_an_evaluation_and_get_202_with_a_queued_job(
    api: Api, bob: User, join: Join, project: Project, role: str
) -> None:
    join(bob, role)
    resp = api(bob).post(_url(project), BODY, format="json")
    assert resp.status_code == 202, resp.json()
    job = resp.json()
    assert (job["kind"], job["status"], job["created_by"]) == ("evaluate", "queued", "bob")
    assert job["config"]["sources"][0]["label"] == "chain_arithmetic"
    assert job["page"] == f"/reward-evaluations/{job['id']}/"
    assert api(bob).get(job["url"]).json()["id"] == job["id"]
    assert [e["id"] for e in api(bob).get(_url(project)).json()] == [job["id"]]


def test_outsiders_can_neither_start_nor_see_nor_export_evaluations(
    api: Api, alice: User, bob: User, project: Project
) -> None:
    job = api(alice).post(_url(project), BODY, format="json").json()
    client = api(bob)
    assert client.post(_url(project), BODY, format="json").status_code == 404
    assert client.get(_url(project)).status_code == 404
    assert client.get(job["url"]).status_code == 404
    assert client.get(f"/api/reward-evaluations/{job['id']}/export/csv/").status_code == 404
    assert client.post(f"/api/reward-evaluations/{job['id']}/cancel/").status_code == 404
    assert api(None).get(job["url"]).status_code in (401, 403)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sources": [{"name": "chain_arithmetic"}]}, "non_field_errors"),  # nothing to compute
        ({**BODY, "sources": []}, "sources"),
        ({**BODY, "sources": [{"name": "no_such_source"}]}, "sources.0.name"),
        (
            {**BODY, "sources": [{"name": "regex_format", "params": {"pattern": "(", "match": "search"}}]},
            "sources.0.params",
        ),
        (
            {**BODY, "sources": [{"name": "reward_model", "params": {"model": "/etc"}}]},
            "sources.0.params.model",
        ),
        ({**BODY, "sources": [{"reward_model_version": 999_999}]}, "sources.0"),
        ({**BODY, "pairwise": {"run": 1, "dataset": 2}}, "pairwise"),
        ({**BODY, "best_of_n": {"benchmark": "/data/mine.yaml"}}, "best_of_n.benchmark"),
        ({**BODY, "best_of_n": {"policy": "/etc"}}, "best_of_n.policy"),
        ({**BODY, "best_of_n": {"n": 65}}, "best_of_n.n"),
        ({**BODY, "agreement": {"annotation_task": 999_999}}, "agreement.annotation_task"),
    ],
)
def test_each_bad_part_is_refused_at_its_field(
    api: Api, alice: User, project: Project, body: dict[str, Any], field: str
) -> None:
    resp = api(alice).post(_url(project), body, format="json")
    assert resp.status_code == 400, resp.json()
    fields = resp.json()["extra"]["fields"]
    assert any(key == field or key.startswith(field + ".") for key in fields), fields
    assert RewardJob.objects.count() == 0


def test_a_run_of_another_project_is_not_a_source_of_pairs(
    api: Api, alice: User, project: Project, run: Run
) -> None:
    other = project_create(name="Other", owner=alice)
    resp = api(alice).post(_url(other), {**BODY, "pairwise": {"run": run.pk}}, format="json")
    assert resp.status_code == 400 and "pairwise.run" in resp.json()["extra"]["fields"]
    ok = api(alice).post(_url(project), {**BODY, "pairwise": {"run": run.pk}}, format="json")
    assert ok.status_code == 202, ok.json()


def test_a_reward_model_version_becomes_its_config_entry(
    api: Api, alice: User, project: Project, reward_model: RewardModel, rm_folder: Path
) -> None:
    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    body = {**BODY, "sources": [{"reward_model_version": version.pk}, {"name": "chain_arithmetic"}]}
    job = api(alice).post(_url(project), body, format="json").json()
    entry = job["config"]["sources"][0]
    assert entry["name"] == "reward_model" and entry["params"]["model"] == f"rm:{version.pk}"
    assert entry["origin"] == {"reward_model_version": version.pk, "name": str(version)}
    assert str(rm_folder) not in str(job)  # the server path never leaves the server


def test_a_version_of_another_project_is_refused(
    api: Api, alice: User, reward_model: RewardModel, rm_folder: Path
) -> None:
    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    other = project_create(name="Other", owner=alice)
    resp = api(alice).post(
        _url(other), {**BODY, "sources": [{"reward_model_version": version.pk}]}, format="json"
    )
    assert resp.status_code == 400 and "sources.0" in resp.json()["extra"]["fields"]


def test_the_starter_cancels_a_queued_job_another_viewer_may_not(
    api: Api, alice: User, bob: User, charlie: User, join: Join, project: Project
) -> None:
    join(bob, "viewer")
    join(charlie, "viewer")
    job = api(bob).post(_url(project), BODY, format="json").json()
    assert api(charlie).post(f"/api/reward-evaluations/{job['id']}/cancel/").status_code == 403
    resp = api(bob).post(f"/api/reward-evaluations/{job['id']}/cancel/")
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    assert api(alice).post(f"/api/reward-evaluations/{job['id']}/cancel/").status_code == 409


def _finished(api: Api, alice: User, project: Project) -> dict[str, Any]:
    job = api(alice).post(_url(project), BODY, format="json").json()
    curve = {"ns": [1, 2], "best_of_n": [0.25, 0.5], "random": [0.25, 0.25], "majority": [0.25, 0.3],
             "oracle": [0.25, 0.6], "best_of_n_ci": [[0.1, 0.4], [0.3, 0.7]]}  # fmt: skip
    result = {
        "best_of_n": {"ns": [1, 2], "benchmark": "builtin:chain_arithmetic", "n": 2, "problems": 4},
        "sources": [{"label": "=cmd()", "name": "chain_arithmetic", "best_of_n": curve,
                     "pairwise": {"accuracy": 0.75, "ci_low": 0.5, "ci_high": 1.0, "scored": 4, "absent": 1},
                     "audit": {"fpr": 0.0, "master_key_fpr": 0.0, "repeat_question_fpr": 0.0, "rows": []},
                     "latency_s_per_completion": 0.001}],
    }  # fmt: skip
    evaluation_finish(job_id=job["id"], status="succeeded", result=result)
    return job


def test_the_csv_export_has_one_row_per_source_and_defuses_formulas(
    api: Api, alice: User, project: Project
) -> None:
    job = _finished(api, alice, project)
    resp = api(alice).get(f"/api/reward-evaluations/{job['id']}/export/csv/")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    assert len(rows) == 1
    row = rows[0]
    assert row["source"] == "'=cmd()"
    assert (row["pairwise_accuracy"], row["best_of_n_at"], row["best_of_n"], row["oracle"]) == (
        "0.75",
        "2",
        "0.5",
        "0.6",
    )
    assert row["audit_fpr"] == "0.0" and row["pairs_absent"] == "1"


def test_the_json_export_holds_the_config_and_result(api: Api, alice: User, project: Project) -> None:
    job = _finished(api, alice, project)
    body = api(alice).get(f"/api/reward-evaluations/{job['id']}/export/json/").json()
    assert body["status"] == "succeeded" and body["result"]["sources"][0]["pairwise"]["accuracy"] == 0.75
    assert body["config"]["audit"] is True
