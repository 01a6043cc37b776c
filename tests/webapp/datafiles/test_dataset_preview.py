"""Previewing a data file before it is stored: its columns, first rows, a guessed mapping and every bad row
(row, column, message), from the same parse and field rules the upload applies; nothing is stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from webapp.datafiles.models import Dataset
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
DATA = Path(__file__).resolve().parents[2] / "data"


def preview(client: APIClient, project: Project, filename: str, content: bytes, **fields: str) -> Any:
    file = SimpleUploadedFile(filename, content)
    return client.post(
        f"/api/projects/{project.pk}/datasets/preview/", {"file": file, **fields}, format="multipart"
    )


def jsonl(*rows: dict[str, Any]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def test_a_jsonl_preview_has_its_columns_first_rows_and_guessed_mapping(
    api: Api, project: Project, alice: User
) -> None:
    response = preview(api(alice), project, "addition.jsonl", (DATA / "addition.jsonl").read_bytes())
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["filename"], body["format"], body["rows"]) == ("addition.jsonl", "jsonl", 4)
    assert body["columns"] == ["prompt", "answer", "difficulty"]
    assert (body["prompt_field"], body["answer_field"]) == ("prompt", "answer")
    assert body["head"][1] == {
        "row": 2,
        "where": "line 2",
        "cells": ["7+8=", "15", "easy"],
    }  # 15 was a JSON number
    assert (body["problems"], body["problem_count"]) == ([], 0)
    assert (body["name"], body["name_taken"]) == ("addition", False)


def test_a_csv_preview_keeps_cells_as_written(api: Api, project: Project, alice: User) -> None:
    body = preview(api(alice), project, "addition.csv", (DATA / "addition.csv").read_bytes()).json()
    assert (body["format"], body["columns"]) == ("csv", ["prompt", "answer", "note"])
    assert body["head"][1]["cells"][1] == "015"  # a leading zero stays: CSV cells are text
    assert body["head"][2]["cells"][0] == "Add these:\n55+45="
    assert body["head"][2]["where"] == "row 3 (line 4)"


def test_a_parquet_preview_reads_its_schema(api: Api, project: Project, alice: User) -> None:
    body = preview(api(alice), project, "addition.parquet", (DATA / "addition.parquet").read_bytes()).json()
    assert body["format"] == "parquet"
    assert {"prompt", "answer"} <= set(body["columns"])
    assert body["rows"] == len(body["head"]) == 3


def test_every_bad_row_is_listed_with_its_row_column_and_message(
    api: Api, project: Project, alice: User
) -> None:
    content = (
        jsonl({"q": "1+1=", "a": "2"}, {"a": "4"}) + b'{"q": "3+3=", "a": "6"\n' + jsonl({"q": "", "a": "8"})
    )
    body = preview(api(alice), project, "bad.jsonl", content, prompt_field="q", answer_field="a").json()
    assert body["rows"] == 4 and body["problem_count"] == 3
    by_row = {p["row"]: p for p in body["problems"]}
    assert by_row[2]["column"] == "q" and "the 'q' field is missing or null" in by_row[2]["message"]
    assert by_row[3]["column"] is None and by_row[3]["message"].startswith("not valid JSON")
    assert by_row[4] == {"row": 4, "where": "line 4", "column": "q", "message": by_row[4]["message"]}
    assert "the 'q' field is empty" in by_row[4]["message"]
    assert [r["row"] for r in body["head"]] == [1, 2, 4]  # the line that is not JSON has no cells to show


def test_the_mapping_decides_which_rows_are_bad(api: Api, project: Project, alice: User) -> None:
    content = (DATA / "missing_answer.jsonl").read_bytes()
    labelled = preview(
        api(alice), project, "m.jsonl", content, prompt_field="prompt", answer_field="answer"
    ).json()
    assert [(p["row"], p["column"]) for p in labelled["problems"]] == [(2, "answer")]
    label_free = preview(
        api(alice), project, "m.jsonl", content, prompt_field="prompt", answer_field=""
    ).json()
    assert (label_free["answer_field"], label_free["problem_count"]) == (None, 0)


def test_only_the_first_fifty_bad_rows_come_back_with_the_total(
    api: Api, project: Project, alice: User
) -> None:
    content = jsonl(*({"prompt": "", "answer": "1"} for _ in range(120)))
    body = preview(api(alice), project, "empty.jsonl", content).json()
    assert body["problem_count"] == 120
    assert [p["row"] for p in body["problems"]] == list(range(1, 51))
    assert len(body["head"]) == 20


def test_usual_column_names_are_guessed_and_a_missing_answer_means_label_free(
    api: Api, project: Project, alice: User
) -> None:
    gsm = preview(
        api(alice), project, "g.jsonl", jsonl({"id": 1, "Question": "1+1=", "solution": "2"})
    ).json()
    assert (gsm["prompt_field"], gsm["answer_field"]) == ("Question", "solution")
    bare = preview(api(alice), project, "b.jsonl", jsonl({"text": "hello", "meta": 3})).json()
    assert (bare["prompt_field"], bare["answer_field"]) == ("text", None)


def test_long_values_are_cut_and_markup_comes_back_as_plain_text(
    api: Api, project: Project, alice: User
) -> None:
    body = preview(
        api(alice), project, "l.jsonl", jsonl({"prompt": "<b>x</b>" + "y" * 500, "answer": None})
    ).json()
    cell = body["head"][0]["cells"][0]
    assert cell.startswith("<b>x</b>y") and cell.endswith("…") and len(cell) == 160
    assert body["head"][0]["cells"][1] is None


def test_a_column_the_file_lacks_is_a_field_error(api: Api, project: Project, alice: User) -> None:
    response = preview(
        api(alice), project, "a.jsonl", jsonl({"prompt": "1+1=", "answer": "2"}), prompt_field="question"
    )
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "extra"}
    assert body["extra"]["fields"]["prompt_field"] == [
        "The file has no column 'question'; its columns are: prompt, answer."
    ]
    same = preview(
        api(alice),
        project,
        "a.jsonl",
        jsonl({"prompt": "1+1="}),
        prompt_field="prompt",
        answer_field="prompt",
    )
    assert "different columns" in same.json()["extra"]["fields"]["answer_field"][0]


@pytest.mark.parametrize(
    ("filename", "content", "expected"),
    [
        ("prompts.txt", b"1+1=\n", "cannot tell the format of prompts.txt"),
        ("list.json", b'{"prompt": "1+1="}', "expected a JSON array of objects"),
        ("latin.csv", "prompt,answer\ncaf\xe9,1\n".encode("latin-1"), "is not UTF-8 text"),
        ("empty.jsonl", b"\n\n", "has no rows"),
    ],
)
def test_a_file_that_is_not_a_data_file_is_a_file_error_without_the_server_path(
    api: Api, project: Project, alice: User, filename: str, content: bytes, expected: str
) -> None:
    response = preview(api(alice), project, filename, content)
    assert response.status_code == 400
    message = response.json()["extra"]["fields"]["file"][0]
    assert expected in message and "/tmp" not in message and "rlvr-upload" not in message


def test_a_preview_stores_nothing(api: Api, project: Project, alice: User, settings: Settings) -> None:
    assert preview(api(alice), project, "a.jsonl", (DATA / "addition.jsonl").read_bytes()).status_code == 200
    assert not Dataset.objects.exists()
    root = Path(settings.RLVR_DATASETS_DIR)
    assert not root.exists() or not any(root.rglob("*"))


def test_a_taken_name_is_flagged(api: Api, project: Project, alice: User) -> None:
    content = (DATA / "addition.jsonl").read_bytes()
    api(alice).post(
        f"/api/projects/{project.pk}/datasets/",
        {"file": SimpleUploadedFile("addition.jsonl", content)},
        format="multipart",
    )
    assert preview(api(alice), project, "addition.jsonl", content).json()["name_taken"] is True


def test_a_file_over_the_upload_limit_is_refused(
    api: Api, project: Project, alice: User, settings: Settings
) -> None:
    settings.RLVR_MAX_UPLOAD_MB = 0
    response = preview(api(alice), project, "a.jsonl", (DATA / "addition.jsonl").read_bytes())
    assert response.status_code == 400
    assert "the limit is 0 MB (RLVR_MAX_UPLOAD_MB)" in response.json()["extra"]["fields"]["file"][0]


def test_a_preview_body_may_pass_the_body_limit_up_to_the_upload_limit(
    api: Api, project: Project, alice: User, settings: Settings
) -> None:
    settings.RLVR_MAX_BODY_KB = 1
    content = jsonl(*({"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(200)))  # ~8 KB
    assert preview(api(alice), project, "big.jsonl", content).json()["rows"] == 200
    settings.RLVR_MAX_UPLOAD_MB = 0
    refused = preview(api(alice), project, "big.jsonl", content)
    assert refused.status_code == 413
    assert refused.json()["extra"]["setting"] == "RLVR_MAX_UPLOAD_MB"


@pytest.mark.parametrize(
    ("role", "status"), [("viewer", 403), ("annotator", 403), ("admin", 200), (None, 404)]
)
def test_only_editors_preview_and_outsiders_get_404(
    api: Api,
    project: Project,
    bob: User,
    join: Callable[[User, str | None], User],
    role: str | None,
    status: int,
) -> None:
    join(bob, role)
    assert preview(api(bob), project, "a.jsonl", (DATA / "addition.jsonl").read_bytes()).status_code == status


def test_a_refused_upload_carries_its_bad_rows_in_extra(api: Api, project: Project, alice: User) -> None:
    content = jsonl({"prompt": "1+1=", "answer": "2"}, {"prompt": "", "answer": "4"}, {"answer": "6"})
    response = api(alice).post(
        f"/api/projects/{project.pk}/datasets/",
        {"file": SimpleUploadedFile("b.jsonl", content)},
        format="multipart",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["message"].startswith("b.jsonl, line 2: the 'prompt' field is empty")
    assert "(and 1 more of 3 rows are invalid" in body["message"]
    assert body["extra"]["fields"] == {"file": [body["message"]]}
    assert [(r["row"], r["column"]) for r in body["extra"]["rows"]] == [(2, "prompt"), (3, "prompt")]
    assert (body["extra"]["problem_count"], body["extra"]["row_count"]) == (2, 3)
    assert not Dataset.objects.exists()
