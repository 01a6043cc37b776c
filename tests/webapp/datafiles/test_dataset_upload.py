"""Uploading prompt data: checked with the trainer's loader, stored only when every row is good."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from webapp.datafiles.models import Dataset
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
DATA = Path(__file__).resolve().parents[2] / "data"


def upload(client: APIClient, project: Project, path: Path, **fields: str) -> Any:
    file = SimpleUploadedFile(path.name, path.read_bytes())
    return client.post(f"/api/projects/{project.pk}/datasets/", {"file": file, **fields}, format="multipart")


def stored_files(settings: Settings) -> list[Path]:
    root = Path(settings.RLVR_DATASETS_DIR)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_a_good_jsonl_file_is_stored_with_its_row_count(
    api: Api, project: Project, alice: User, settings: Settings
) -> None:
    response = upload(api(alice), project, DATA / "addition.jsonl")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["name"], body["format"], body["rows"], body["fields"]) == (
        "addition",
        "jsonl",
        4,
        ["prompt", "answer", "difficulty"],
    )
    stored = Path(Dataset.objects.get(pk=body["id"]).path)
    assert stored.read_bytes() == (DATA / "addition.jsonl").read_bytes()
    assert stored.parent == Path(settings.RLVR_DATASETS_DIR) / str(project.pk)
    assert body["config_data"] == {
        "source": "file",
        "path": f"dataset:{body['id']}",
        "format": "jsonl",
        "prompt_field": "prompt",
        "answer_field": "answer",
    }


def test_csv_and_parquet_files_are_accepted(api: Api, project: Project, alice: User) -> None:
    assert upload(api(alice), project, DATA / "addition.csv").json()["rows"] == 4
    assert upload(api(alice), project, DATA / "addition.parquet", name="pq").json()["format"] == "parquet"


def test_a_malformed_line_is_rejected_naming_the_line_and_nothing_is_stored(
    api: Api, project: Project, alice: User, settings: Settings
) -> None:
    response = upload(api(alice), project, DATA / "malformed_line.jsonl")
    assert response.status_code == 400
    message = response.json()["extra"]["fields"]["file"][0]
    assert message.startswith("malformed_line.jsonl, line 3: not valid JSON")
    assert "/tmp" not in message  # the staging path is never shown
    assert not Dataset.objects.exists()
    assert stored_files(settings) == []


def test_a_row_missing_the_answer_is_rejected_naming_the_row(api: Api, project: Project, alice: User) -> None:
    response = upload(api(alice), project, DATA / "missing_answer.jsonl")
    assert response.status_code == 400
    assert "line 3: the 'answer' field is missing" in response.json()["message"]


def test_label_free_data_needs_no_answer_field(api: Api, project: Project, alice: User) -> None:
    response = upload(api(alice), project, DATA / "missing_answer.jsonl", answer_field="")
    assert response.status_code == 201
    assert response.json()["config_data"]["answer_field"] is None


def test_an_unknown_extension_is_rejected(api: Api, project: Project, alice: User, tmp_path: Path) -> None:
    odd = tmp_path / "prompts.txt"
    odd.write_text("1+1=\n")
    response = upload(api(alice), project, odd)
    assert response.status_code == 400
    assert "cannot tell the format of prompts.txt" in response.json()["message"]


def test_dataset_names_are_unique_in_a_project(api: Api, project: Project, alice: User) -> None:
    upload(api(alice), project, DATA / "addition.jsonl")
    response = upload(api(alice), project, DATA / "addition.jsonl")
    assert response.status_code == 400
    assert "name" in response.json()["extra"]["fields"]


def test_a_file_over_the_size_limit_is_rejected(
    api: Api, project: Project, alice: User, settings: Settings
) -> None:
    settings.RLVR_MAX_UPLOAD_MB = 0
    response = upload(api(alice), project, DATA / "addition.jsonl")
    assert response.status_code == 400
    assert "RLVR_MAX_UPLOAD_MB" in response.json()["message"]


def test_datasets_are_listed_per_project(api: Api, project: Project, alice: User) -> None:
    upload(api(alice), project, DATA / "addition.jsonl")
    assert [d["name"] for d in api(alice).get(f"/api/projects/{project.pk}/datasets/").json()] == ["addition"]
