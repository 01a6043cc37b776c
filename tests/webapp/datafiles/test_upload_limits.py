"""Hostile uploads are refused quickly with a short message in the one error shape (issue 13 part 5)."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from webapp.datafiles.models import Dataset
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def upload(
    client: APIClient, url: str, filename: str, content: bytes, **fields: str
) -> tuple[int, dict[str, object]]:
    response = client.post(url, {"file": SimpleUploadedFile(filename, content), **fields}, format="multipart")
    return response.status_code, response.json()


def million_column_csv() -> bytes:
    header = ",".join(["prompt", "answer"] + [f"c{i}" for i in range(999_998)])
    return (header + "\n" + ",".join(["1+1=", "2"] + ["x"] * 999_998) + "\n").encode()


def test_a_million_column_csv_upload_is_a_short_400_naming_the_column_cap(
    api: Api, project: Project, alice: User
) -> None:
    status, body = upload(
        api(alice), f"/api/projects/{project.pk}/datasets/", "wide.csv", million_column_csv()
    )
    assert status == 400
    assert set(body) == {"message", "extra"}
    assert "more than 256 columns" in str(body["message"])
    assert len(json.dumps(body)) < 1024
    assert not Dataset.objects.exists()


def test_a_benchmark_file_with_thousands_of_bad_rows_lists_a_hundred_and_counts_the_rest(
    api: Api, project: Project, alice: User
) -> None:
    rows = b'{"problem": "", "answer": "2"}\n' * 5000
    status, body = upload(api(alice), f"/api/projects/{project.pk}/benchmark-files/", "bad.jsonl", rows)
    assert status == 400
    assert "5000 of 5000 rows are invalid" in str(body["message"])
    assert "... and 4980 more" in str(body["message"])
    extra = body["extra"]
    assert isinstance(extra, dict)
    assert len(extra["fields"]["bad_rows"]) == 100
    assert len(json.dumps(body)) < 64 * 1024


def test_a_nul_in_an_upload_form_field_is_a_400_naming_it(api: Api, project: Project, alice: User) -> None:
    status, body = upload(
        api(alice),
        f"/api/projects/{project.pk}/datasets/",
        "a.jsonl",
        b'{"prompt": "1+1=", "answer": "2"}\n',
        name="bad\x00name",
    )
    assert status == 400
    assert body["extra"] == {"fields": {"name": [str(body["message"]).removeprefix("name: ")]}}
