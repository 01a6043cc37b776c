"""Integers past Python's 4,300-digit conversion limit, floats that overflow, nested YAML and form-encoded
JSON nulls are a 400 in the one error shape at every entry point, from the one reader (trainer/bounds.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
HUGE = "9" * 5000  # past the 4,300 digits int() converts


def error_shaped(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    body: dict[str, Any] = response.json()
    assert set(body) == {"message", "extra"} and isinstance(body["message"], str)
    return body


def send_raw(client: APIClient, method: str, url: str, body: str) -> Any:
    return client.generic(method, url, body, content_type="application/json")


def json_routes(project: Project) -> list[tuple[str, str, str]]:
    """(method, url, body with ``HUGE`` in it) for every listed JSON entry point."""
    pid = project.pk
    return [
        (
            "POST",
            "/api/ingest/batches/",
            '{"project": ' + str(pid) + ', "run_key": "k", "step": ' + HUGE + "}",
        ),
        ("POST", f"/api/projects/{pid}/experiments/", '{"name": "x", "config": {"seed": ' + HUGE + "}}"),
        ("POST", "/api/configs/yaml/", '{"config": {"seed": ' + HUGE + "}}"),
        ("POST", "/api/configs/parse/", '{"text": ' + HUGE + "}"),
        ("POST", f"/api/projects/{pid}/run-views/", '{"name": "v", "spec": {"columns": [' + HUGE + "]}}"),
        ("PUT", f"/api/projects/{pid}/chart-layout/", '{"spec": {"smoothing": ' + HUGE + "}}"),
        (
            "POST",
            f"/api/projects/{pid}/benchmarks/",
            '{"name": "b", "source": "builtin", "config": {"k": ' + HUGE + "}}",
        ),
        ("POST", f"/api/projects/{pid}/rubrics/", '{"name": "r", "criteria": [{"weight": ' + HUGE + "}]}"),
    ]


@pytest.mark.parametrize(
    "index", range(8), ids=["ingest", "experiments", "configs-yaml", "configs-parse", "run-views", "chart-layout",
                            "benchmarks", "rubrics"]
)  # fmt: skip
def test_a_5000_digit_integer_in_a_json_body_is_a_400_in_the_error_shape(
    api: Api, project: Project, alice: User, index: int
) -> None:
    method, url, body = json_routes(project)[index]
    payload = error_shaped(send_raw(api(alice), method, url, body))
    assert "more than 300 digits" in payload["message"]


def test_an_integer_of_300_digits_still_parses(api: Api, project: Project, alice: User) -> None:
    response = send_raw(api(alice), "POST", "/api/configs/parse/", '{"text": "seed: ' + "9" * 300 + '"}')
    assert response.status_code == 200
    assert response.json()["config"]["seed"] == int("9" * 300)


def test_a_float_that_overflows_is_a_400(api: Api, project: Project, alice: User) -> None:
    body = '{"name": "x", "config": {"training": {"learning_rate": 1' + "0" * 400 + ".5}}}"
    payload = error_shaped(send_raw(api(alice), "POST", f"/api/projects/{project.pk}/experiments/", body))
    assert "finite" in payload["message"]


@pytest.mark.parametrize(
    "text",
    ["seed: " + HUGE, "seed: 0x" + "f" * 400, "seed: " + ":".join(["59"] * 200), "seed: [" + HUGE + "]"],
    ids=["decimal", "hexadecimal", "base-60", "in-a-list"],
)
def test_a_huge_integer_in_pasted_yaml_is_a_400_with_its_line(api: Api, alice: User, text: str) -> None:
    payload = error_shaped(
        api(alice).post("/api/configs/parse/", {"text": "name: x\n" + text}, format="json")
    )
    assert "more than 300 digits" in payload["message"] and payload["extra"]["line"] == 2


@pytest.mark.parametrize(
    "text",
    [
        "[" * 40_000,
        "{a: " * 10_000,
        "a: " + "[" * 20_000 + "]" * 20_000,
        "".join(" " * i + "- \n" for i in range(200)),
    ],
    ids=["flow-sequences", "flow-mappings", "closed-sequences", "block-sequences"],
)
def test_nested_yaml_of_40_kb_is_refused_quickly(api: Api, alice: User, text: str) -> None:
    started = time.process_time()
    payload = error_shaped(api(alice).post("/api/configs/parse/", {"text": text}, format="json"))
    spent = time.process_time() - started
    assert "nests more than 64 levels" in payload["message"]
    assert spent < 5, (
        f"{spent:.1f} s of CPU"
    )  # a loose guard; benchmarks/nested_input_refusal.py has the figures


def test_a_form_encoded_null_config_is_a_400_naming_the_field(
    api: Api, project: Project, alice: User
) -> None:
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "x", "config": "null"})
    assert error_shaped(response)["extra"]["fields"] == {"config": ["This field may not be null."]}


def test_a_form_encoded_config_is_read_like_a_json_one(api: Api, project: Project, alice: User) -> None:
    import json

    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "form", "config": json.dumps(SMALL_CONFIG)}
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, '{"seed": ' + HUGE + "}", '{"lr": 1e999}', "NaN"],
    ids=["deep", "huge", "overflow", "nan"],
)
def test_hostile_json_in_a_form_field_is_a_400(api: Api, project: Project, alice: User, text: str) -> None:
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "x", "config": text})
    assert "config" in error_shaped(response)["extra"]["fields"]


def test_a_runs_table_metrics_parameter_over_its_bound_is_a_400_naming_it(
    api: Api, project: Project, alice: User
) -> None:
    response = api(alice).get(f"/api/projects/{project.pk}/runs/table/", {"metrics": "k" * 8_100})
    payload = error_shaped(response)
    assert set(payload["extra"]["fields"]) == {"metrics"} and "At most 40 metric keys" in payload["message"]


@pytest.mark.parametrize("name", ["metrics", "search"])
def test_a_70_kb_query_string_is_a_414_in_the_error_shape(
    api: Api, project: Project, alice: User, name: str
) -> None:
    url = f"/api/projects/{project.pk}/runs/table/" if name == "metrics" else "/api/runs/1/rollouts/"
    response = api(alice).get(url, {name: "x" * 70_000})
    assert response.status_code == 414
    body = response.json()
    assert set(body) == {"message", "extra"} and "the limit is 12 KB" in body["message"]
