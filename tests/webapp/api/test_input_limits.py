"""Bodies with NUL, lone surrogates, NaN or deep nesting, oversized bodies and out-of-range numbers are
answered 400 / 413 in the one error shape, never a 500 (issue 13 part 5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.models import Experiment
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def post_raw(client: APIClient, url: str, body: str) -> tuple[int, dict[str, Any]]:
    response = client.generic("POST", url, body, content_type="application/json")
    return response.status_code, response.json()


def experiments_url(project: Project) -> str:
    return f"/api/projects/{project.pk}/experiments/"


def test_a_max_steps_beyond_the_database_column_is_a_400_naming_the_field(
    api: Api, project: Project, alice: User
) -> None:
    config = {**SMALL_CONFIG, "training": {"max_steps": 10**30}}
    response = api(alice).post(experiments_url(project), {"name": "huge", "config": config}, format="json")
    assert response.status_code == 400
    assert set(response.json()["extra"]["fields"]) == {"config.training.max_steps"}


def test_launching_an_experiment_with_the_largest_max_steps_works(
    api: Api, project: Project, alice: User
) -> None:
    config = {**SMALL_CONFIG, "training": {**SMALL_CONFIG["training"], "max_steps": 10_000_000}}
    created = api(alice).post(experiments_url(project), {"name": "long", "config": config}, format="json")
    assert created.status_code == 201
    launched = api(alice).post("/api/runs/", {"experiment": created.json()["id"]}, format="json")
    assert launched.status_code == 201


@pytest.mark.parametrize("text", ["run\\u0000one", "run\\ud800one"])
def test_a_nul_or_lone_surrogate_in_a_config_string_is_a_400_with_its_path(
    api: Api, project: Project, alice: User, text: str
) -> None:
    body = '{"name": "x", "config": {"name": "' + text + '"}}'
    status, payload = post_raw(api(alice), experiments_url(project), body)
    assert status == 400
    assert set(payload) == {"message", "extra"}
    assert payload["extra"] == {"fields": {"config.name": [payload["message"].removeprefix("config.name: ")]}}


def test_a_nul_in_an_object_key_is_refused(api: Api, project: Project, alice: User) -> None:
    status, payload = post_raw(
        api(alice), experiments_url(project), '{"name": "x", "config": {"a\\u0000": 1}}'
    )
    assert status == 400
    assert "NUL" in str(payload["message"])


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_learning_rate_is_a_400(api: Api, project: Project, alice: User, literal: str) -> None:
    body = '{"name": "x", "config": {"training": {"learning_rate": ' + literal + "}}}"
    status, payload = post_raw(api(alice), experiments_url(project), body)
    assert status == 400
    assert "finite" in str(payload["message"])


def test_the_string_inf_as_a_learning_rate_is_a_400_naming_the_field(
    api: Api, project: Project, alice: User
) -> None:
    config = {"training": {"learning_rate": "inf"}}
    response = api(alice).post(experiments_url(project), {"name": "x", "config": config}, format="json")
    assert response.status_code == 400
    assert "config.training.learning_rate" in response.json()["extra"]["fields"]


def test_a_100000_deep_array_is_a_400_not_a_recursion_error(api: Api, project: Project, alice: User) -> None:
    body = '{"name": "x", "config": ' + "[" * 100_000 + "]" * 100_000 + "}"
    status, payload = post_raw(api(alice), experiments_url(project), body)
    assert status == 400
    assert "nests more than 64 levels" in str(payload["message"])


def test_a_benchmark_config_that_is_not_an_object_is_a_400(api: Api, project: Project, alice: User) -> None:
    body = {"name": "b", "source": "builtin", "builtin": "builtin:addition", "config": True}
    response = api(alice).post(f"/api/projects/{project.pk}/benchmarks/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["config"]


def test_a_body_over_the_limit_is_a_413_in_the_one_shape(api: Api, project: Project, alice: User) -> None:
    body = json.dumps({"name": "x", "description": "d" * 3_300_000, "config": {}})
    status, payload = post_raw(api(alice), experiments_url(project), body)
    assert status == 413
    assert set(payload) == {"message", "extra"}
    assert str(payload["message"]).startswith(
        "Request body is 3.1 MB; the limit is 2.5 MB (RLVR_MAX_BODY_KB)"
    )
    assert payload["extra"]["limit_bytes"] == 2560 * 1024


def test_the_body_limit_follows_the_setting(
    api: Api, project: Project, alice: User, settings: SettingsWrapper
) -> None:
    settings.RLVR_MAX_BODY_KB = 64
    body = json.dumps({"name": "x", "description": "d" * 70_000, "config": {}})
    status, _ = post_raw(api(alice), experiments_url(project), body)
    assert status == 413


def test_a_body_without_content_length_is_still_capped(project: Project, alice: User) -> None:
    from io import BytesIO

    from rest_framework.test import APIRequestFactory, force_authenticate

    from webapp.experiments.api_experiments import ExperimentListApi

    body = json.dumps({"name": "x", "description": "d" * 3_000_000, "config": {}}).encode()
    request = APIRequestFactory().post(experiments_url(project), b"", content_type="application/json")
    request.META["CONTENT_LENGTH"] = "1"  # a lying client: the parser reads past it only up to the limit
    request._stream = BytesIO(body)
    force_authenticate(request, user=alice)
    response = ExperimentListApi.as_view()(request, project_id=project.pk)
    assert response.status_code == 413


def test_too_many_form_fields_is_a_413_in_the_one_shape(api: Api, project: Project, alice: User) -> None:
    body = "&".join(f"f{i}=1" for i in range(1200))
    response = api(alice).generic(
        "POST", experiments_url(project), body, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.json()["message"]


def test_a_nul_in_a_query_parameter_is_a_400(api: Api, experiment: Experiment, alice: User) -> None:
    response = api(alice).get(f"/api/projects/{experiment.project_id}/experiments/?search=a%00b")
    assert response.status_code == 400
    assert "NUL" in response.json()["message"]


def test_a_nul_in_a_form_field_is_a_400(api: Api, project: Project, alice: User) -> None:
    response = api(alice).post(
        experiments_url(project), "name=a%00b&config=%7B%7D", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["name"]


def test_an_oversized_page_post_gets_a_readable_page(alice: User, project: Project) -> None:
    client = Client()
    client.force_login(alice)
    response = client.post(f"/projects/{project.pk}/benchmarks/", {"name": "x" * 3_000_000})
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/html")
    assert b"RLVR_MAX_BODY_KB" in response.content


def test_an_upload_may_be_larger_than_the_body_limit(api: Api, project: Project, alice: User) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    rows = "".join(
        json.dumps({"prompt": f"{i}+{i}=" + " " * 40, "answer": str(2 * i)}) + "\n" for i in range(40_000)
    )
    assert len(rows) > 2560 * 1024
    upload = SimpleUploadedFile("big.jsonl", rows.encode(), content_type="application/jsonl")
    response = api(alice).post(f"/api/projects/{project.pk}/datasets/", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.json()


def test_an_upload_over_the_upload_limit_is_refused_before_it_is_read(
    api: Api, project: Project, alice: User, settings: SettingsWrapper
) -> None:
    settings.RLVR_MAX_UPLOAD_MB = 1
    settings.RLVR_MAX_BODY_KB = 64
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("big.jsonl", b'{"prompt": "1+1=", "answer": "2"}\n' * 40_000)
    response = api(alice).post(f"/api/projects/{project.pk}/datasets/", {"file": upload}, format="multipart")
    assert response.status_code == 413
    assert "RLVR_MAX_UPLOAD_MB" in response.json()["message"]


def test_deeply_nested_json_in_a_page_form_field_is_a_form_error_not_a_500(
    alice: User, project: Project
) -> None:
    client = Client()
    client.force_login(alice)
    deep = "[" * 100_000 + "]" * 100_000
    response = client.post(
        f"/projects/{project.pk}/benchmarks/",
        {
            "name": "deep",
            "source": "reasoning_gym",
            "task": "chain_sum",
            "task_config": '{"x": ' + deep + "}",
        },
    )
    assert response.status_code == 200
    assert b"nests more than 64 levels" in response.content
