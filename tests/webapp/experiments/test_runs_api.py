from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.experiments.models import Experiment, Run
from webapp.experiments.services import run_mark_started

Api = Callable[[User | None], APIClient]
Capture = Any


def test_posting_to_runs_launches_the_experiment(
    api: Api,
    experiment: Experiment,
    alice: User,
    enqueued: list[int],
    django_capture_on_commit_callbacks: Capture,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api(alice).post("/api/runs/", {"experiment": experiment.pk}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["experiment"], body["experiment_name"], body["max_steps"]) == (
        "queued",
        experiment.pk,
        "addition",
        20,
    )
    assert enqueued == [body["id"]]


def test_posting_to_an_experiments_runs_launches_it(api: Api, experiment: Experiment, alice: User) -> None:
    response = api(alice).post(f"/api/experiments/{experiment.pk}/runs/")
    assert response.status_code == 201
    assert Run.objects.get(pk=response.json()["id"]).experiment == experiment


def test_launching_an_experiment_i_cannot_see_is_404(api: Api, experiment: Experiment, bob: User) -> None:
    assert api(bob).post("/api/runs/", {"experiment": experiment.pk}, format="json").status_code == 404


def test_runs_are_listed_newest_first_and_paginated(api: Api, experiment: Experiment, alice: User) -> None:
    client = api(alice)
    ids = [client.post(f"/api/experiments/{experiment.pk}/runs/").json()["id"] for _ in range(3)]
    page = client.get("/api/runs/?page_size=2").json()
    assert page["count"] == 3
    assert [r["id"] for r in page["results"]] == ids[::-1][:2]
    assert page["next"] is not None


def test_runs_can_be_filtered_by_status(api: Api, run: Run, alice: User) -> None:
    run_mark_started(run_id=run.pk, worker="w")
    client = api(alice)
    assert client.get("/api/runs/?status=running").json()["count"] == 1
    assert client.get("/api/runs/?status=queued").json()["count"] == 0
    assert client.get(f"/api/projects/{run.experiment.project_id}/runs/?status=running").json()["count"] == 1
    assert client.get(f"/api/experiments/{run.experiment_id}/runs/").json()["count"] == 1


def test_i_only_see_runs_of_my_projects(api: Api, run: Run, bob: User) -> None:
    assert api(bob).get("/api/runs/").json()["count"] == 0


def test_a_run_shows_its_config_snapshot_and_traceback(api: Api, run: Run, alice: User) -> None:
    body = api(alice).get(f"/api/runs/{run.pk}/").json()
    assert body["config"]["checkpoint"]["output_dir"] == run.output_dir
    assert body["traceback"] == ""


def test_cancel_and_resume_over_the_api(api: Api, run: Run, alice: User) -> None:
    client = api(alice)
    assert client.post(f"/api/runs/{run.pk}/cancel/").json()["status"] == "cancelled"
    assert client.post(f"/api/runs/{run.pk}/resume/").json()["status"] == "queued"
