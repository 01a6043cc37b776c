"""Configs name an uploaded data file as ``data.path: dataset:<id>`` of their own project; the API never
hands out the server path, and no other path (another project's file, a server file) is accepted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.datafiles.models import Dataset
from webapp.experiments.config_paths import run_config_for_worker
from webapp.experiments.models import Experiment, Run
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]
DATA = Path(__file__).resolve().parents[2] / "data"
FIELD = "config.data.path"


def upload(api: Api, user: User, project: Project) -> dict[str, Any]:
    file = SimpleUploadedFile("addition.jsonl", (DATA / "addition.jsonl").read_bytes())
    response = api(user).post(f"/api/projects/{project.pk}/datasets/", {"file": file}, format="multipart")
    assert response.status_code == 201, response.json()
    body: dict[str, Any] = response.json()
    return body


def create(api: Api, user: User, project: Project, data: dict[str, Any]) -> Any:
    config = {**SMALL_CONFIG, "data": data}
    return api(user).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "exp", "config": config}, format="json"
    )


@pytest.fixture
def bobs_dataset(api: Api, bob: User) -> Dataset:
    theirs = project_create(name="Bob's", owner=bob)
    return Dataset.objects.get(pk=upload(api, bob, theirs)["id"])


def test_the_datasets_api_never_returns_a_server_path(api: Api, alice: User, project: Project) -> None:
    uploaded = upload(api, alice, project)
    listed = api(alice).get(f"/api/projects/{project.pk}/datasets/").json()
    stored = Dataset.objects.get(pk=uploaded["id"]).path
    for body in (uploaded, listed[0]):
        assert "path" not in body
        assert stored not in json.dumps(body)
        assert body["ref"] == f"dataset:{uploaded['id']}" == body["config_data"]["path"]


def test_an_uploaded_dataset_named_by_id_launches_and_the_worker_gets_its_file(
    api: Api, alice: User, project: Project
) -> None:
    uploaded = upload(api, alice, project)
    response = create(api, alice, project, uploaded["config_data"])
    assert response.status_code == 201, response.json()
    assert response.json()["config"]["data"]["path"] == uploaded["ref"]  # the stored config keeps the id
    launched = api(alice).post(f"/api/experiments/{response.json()['id']}/runs/")
    assert launched.status_code == 201, launched.json()
    run = Run.objects.get(pk=launched.json()["id"])
    assert run.config["data"]["path"] == uploaded["ref"]
    assert run_config_for_worker(run=run)["data"]["path"] == Dataset.objects.get(pk=uploaded["id"]).path


def test_another_projects_dataset_by_id_is_refused(
    api: Api, alice: User, project: Project, bobs_dataset: Dataset
) -> None:
    response = create(api, alice, project, {"source": "file", "path": f"dataset:{bobs_dataset.pk}"})
    assert response.status_code == 400
    message = response.json()["extra"]["fields"][FIELD][0]
    assert message.startswith(
        f"data.path 'dataset:{bobs_dataset.pk}' is not an uploaded data file of this project"
    )
    assert f"GET /api/projects/{project.pk}/datasets/" in message


def test_another_projects_dataset_by_its_server_path_is_refused(
    api: Api, alice: User, project: Project, bobs_dataset: Dataset
) -> None:
    response = create(api, alice, project, {"source": "file", "path": bobs_dataset.path})
    assert response.status_code == 400
    assert "is not an uploaded data file of this project" in response.json()["extra"]["fields"][FIELD][0]


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "tests/data/addition.jsonl", "dataset:", "dataset:1/../2", "dataset:x"]
)
def test_a_path_that_is_not_an_uploaded_dataset_of_the_project_is_refused(
    api: Api, alice: User, project: Project, path: str
) -> None:
    response = create(api, alice, project, {"source": "file", "path": path})
    assert response.status_code == 400
    assert response.json()["message"].startswith(
        f"data.path {path!r} is not an uploaded data file of this project"
    )


def test_a_0600_key_file_as_data_is_refused_and_its_text_never_shown(
    api: Api, alice: User, project: Project, tmp_path: Path
) -> None:
    key = tmp_path / "id_key.csv"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n")
    key.chmod(0o600)
    response = create(api, alice, project, {"source": "file", "path": str(key), "format": "csv"})
    assert response.status_code == 400
    assert "BEGIN OPENSSH" not in json.dumps(response.json())


def test_a_launch_refuses_a_stored_config_that_names_another_projects_dataset(
    alice: User, experiment: Experiment, bobs_dataset: Dataset
) -> None:
    from webapp.core.errors import InvalidInput
    from webapp.experiments.services import run_launch

    data = {**experiment.config["data"], "source": "file", "path": f"dataset:{bobs_dataset.pk}"}
    Experiment.objects.filter(pk=experiment.pk).update(config={**experiment.config, "data": data})
    experiment.refresh_from_db()
    with pytest.raises(InvalidInput) as err:
        run_launch(experiment=experiment, actor=alice)
    assert FIELD in err.value.fields


def test_an_inline_benchmark_of_periodic_evaluation_is_held_to_the_same_rule(
    api: Api, alice: User, project: Project, bobs_dataset: Dataset
) -> None:
    config = {**SMALL_CONFIG, "evaluation": {"eval_every": 5, "benchmarks": [
        "builtin:addition", {"name": "theirs", "data": {"source": "file", "path": f"dataset:{bobs_dataset.pk}"}},
    ]}}  # fmt: skip
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "e", "config": config}, format="json"
    )
    assert response.status_code == 400
    assert "config.evaluation.benchmarks.1.data.path" in response.json()["extra"]["fields"]


def test_a_benchmark_file_on_the_server_cannot_be_named_for_periodic_evaluation(
    api: Api, alice: User, project: Project
) -> None:
    config = {
        **SMALL_CONFIG,
        "evaluation": {"eval_every": 5, "benchmarks": ["tests/data/math500_style.yaml"]},
    }
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "e", "config": config}, format="json"
    )
    assert response.status_code == 400
    assert (
        "is not a built-in benchmark"
        in response.json()["extra"]["fields"]["config.evaluation.benchmarks.0"][0]
    )


def test_the_experiment_form_lists_the_projects_data_files_by_id_and_no_path(
    api: Api, alice: User, bob: User, project: Project, bobs_dataset: Dataset
) -> None:
    from django.test import Client

    mine = Dataset.objects.get(pk=upload(api, alice, project)["id"])
    client = Client()
    client.force_login(alice)
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert f'<option value="{mine.pk}" data-ref="dataset:{mine.pk}">addition (' in html  # the dataset select
    assert f"dataset:{bobs_dataset.pk}<" not in html and f'dataset:{bobs_dataset.pk}"' not in html
    assert mine.path not in html


def test_built_in_data_and_benchmarks_name_no_file_and_keep_working(
    api: Api, alice: User, project: Project
) -> None:
    config = {
        **SMALL_CONFIG,
        "data": {"source": "reasoning_gym", "task": "chain_sum"},
        "evaluation": {
            "eval_every": 5,
            "benchmarks": ["builtin:addition", {"name": "mine", "data": {"source": "demo"}}],
        },
    }
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "e", "config": config}, format="json"
    )
    assert response.status_code == 201, response.json()
    launched = api(alice).post(f"/api/experiments/{response.json()['id']}/runs/")
    assert launched.status_code == 201, launched.json()
    resolved = run_config_for_worker(run=Run.objects.get(pk=launched.json()["id"]))
    assert (
        resolved["data"]["task"] == "chain_sum"
        and resolved["evaluation"]["benchmarks"][0] == "builtin:addition"
    )
