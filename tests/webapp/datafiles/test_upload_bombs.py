"""Decompression bombs and oversized values in every upload format are a 400 in the one error shape that
names the limit and where it was passed; the upload cap counts decoded bytes; a preview never echoes a
long cell. The bombs are built at test time with pyarrow: a few KB on disk."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from webapp.datafiles.models import Dataset
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
CODECS = ["zstd", "gzip", "snappy", "brotli", "lz4"]


def post(
    client: APIClient, url: str, filename: str, content: bytes, **fields: str
) -> tuple[int, dict[str, Any]]:
    response = client.post(url, {"file": SimpleUploadedFile(filename, content), **fields}, format="multipart")
    return response.status_code, response.json()


def parquet_bytes(table: pa.Table, codec: str = "zstd", **options: Any) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, compression=codec, **options)
    return out.getvalue()


def bomb(codec: str) -> bytes:
    return parquet_bytes(pa.table({"question": ["x" * (8 << 20)], "answer": ["2"]}), codec)


@pytest.mark.parametrize("codec", CODECS)
def test_a_parquet_bomb_upload_is_a_400_naming_the_cell_and_the_limit(
    api: Api, project: Project, alice: User, codec: str
) -> None:
    status, body = post(
        api(alice),
        f"/api/projects/{project.pk}/datasets/",
        "bomb.parquet",
        bomb(codec),
        prompt_field="question",
    )
    assert status == 400
    assert set(body) == {"message", "extra"}
    assert "bomb.parquet, row 1, column 'question': 8.0 MB decoded" in body["message"]
    assert "the limit is 1 MiB per cell" in body["message"]
    assert body["extra"]["fields"]["file"] == [body["message"]]
    assert not Dataset.objects.exists()


def test_a_parquet_bomb_preview_is_a_400_too(api: Api, project: Project, alice: User) -> None:
    status, body = post(
        api(alice), f"/api/projects/{project.pk}/datasets/preview/", "bomb.parquet", bomb("zstd")
    )
    assert status == 400
    assert "the limit is 1 MiB per cell" in body["message"]


def test_a_parquet_bomb_benchmark_file_is_a_400(api: Api, project: Project, alice: User) -> None:
    status, body = post(
        api(alice),
        f"/api/projects/{project.pk}/benchmark-files/",
        "bomb.parquet",
        bomb("lz4"),
        name="bomb",
        problem_field="question",
    )
    assert status == 400
    assert "the limit is 1 MiB per cell" in body["message"]


def test_the_upload_cap_counts_the_bytes_a_parquet_file_decodes_to(
    api: Api, project: Project, alice: User, settings: Settings
) -> None:
    settings.RLVR_MAX_UPLOAD_MB = 1
    questions = [f"{i}+1=" + "q" * 1000 for i in range(3000)]  # 3 MB decoded, a few KB compressed
    content = parquet_bytes(pa.table({"question": questions, "answer": ["2"] * 3000}), row_group_size=500)
    assert len(content) < 200_000
    status, body = post(
        api(alice), f"/api/projects/{project.pk}/datasets/", "big.parquet", content, prompt_field="question"
    )
    assert status == 400
    assert "more than 1 MiB of data once decoded" in body["message"]


def test_a_json_file_of_one_giant_string_is_a_400_naming_the_record_limit(
    api: Api, project: Project, alice: User
) -> None:
    content = b'[{"prompt": "' + b"x" * (2 << 20) + b'", "answer": "2"}]'
    status, body = post(api(alice), f"/api/projects/{project.pk}/datasets/", "giant.json", content)
    assert status == 400
    assert "giant.json, record 1: longer than 1,048,576 characters" in body["message"]


def test_a_deeply_nested_json_upload_is_a_400(api: Api, project: Project, alice: User) -> None:
    status, body = post(
        api(alice), f"/api/projects/{project.pk}/datasets/", "deep.json", b"[" * 100_000 + b"]" * 100_000
    )
    assert status == 400
    assert "nests more than 64 levels deep" in body["message"]


def test_a_csv_with_a_giant_quoted_cell_is_a_400_naming_its_line(
    api: Api, project: Project, alice: User
) -> None:
    content = b'prompt,answer\n"' + (b"v" * 999 + b"\n") * 300 + b'",2\n'
    status, body = post(api(alice), f"/api/projects/{project.pk}/datasets/", "cell.csv", content)
    assert status == 400
    assert "a cell longer than 131,072 characters" in body["message"]


def test_a_gzip_compressed_upload_is_refused_not_decompressed(
    api: Api, project: Project, alice: User
) -> None:
    content = gzip.compress(b'{"prompt": "' + b"x" * (8 << 20) + b'", "answer": "2"}\n')
    for filename, says in (("data.jsonl.gz", "extension '.gz'"), ("data.jsonl", "not UTF-8")):
        status, body = post(api(alice), f"/api/projects/{project.pk}/datasets/", filename, content)
        assert status == 400
        assert says in body["message"]


def test_a_preview_cuts_a_long_cell_with_an_ellipsis(api: Api, project: Project, alice: User) -> None:
    content = parquet_bytes(pa.table({"prompt": ["p" * 500_000], "answer": ["2"]}))
    status, body = post(api(alice), f"/api/projects/{project.pk}/datasets/preview/", "long.parquet", content)
    assert status == 200, body
    cell = body["head"][0]["cells"][0]
    assert len(cell) == 160 and cell.endswith("…")
    assert len(json.dumps(body)) < 4096
