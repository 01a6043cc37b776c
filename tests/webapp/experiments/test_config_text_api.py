"""POST /api/configs/parse/ reads a pasted YAML or JSON config on the server, bounded, and answers a mapping
or an error in the one shape with the line; POST /api/configs/yaml/ writes a config as YAML."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.experiments.config_text import MAX_CONFIG_TEXT_BYTES

Api = Callable[[User | None], APIClient]
PARSE = "/api/configs/parse/"


def parse(api: Api, user: User | None, text: str) -> tuple[int, dict[str, Any]]:
    response = api(user).post(PARSE, {"text": text}, format="json")
    return response.status_code, response.json()


def test_a_yaml_config_comes_back_as_its_mapping(api: Api, alice: User) -> None:
    status, body = parse(api, alice, "training:\n  learning_rate: 0.001\nverifiers:\n  - name: exact\n")
    assert status == 200
    assert body == {"config": {"training": {"learning_rate": 0.001}, "verifiers": [{"name": "exact"}]}}


def test_a_json_config_is_read_too(api: Api, alice: User) -> None:
    assert parse(api, alice, '{"rollout": {"num_generations": 4}}') == (
        200,
        {"config": {"rollout": {"num_generations": 4}}},
    )


def test_bad_yaml_syntax_names_the_line(api: Api, alice: User) -> None:
    status, body = parse(
        api, alice, "model:\n  name_or_path: tiny:addition\ntraining:\n  learning_rate: [1, 2\n"
    )
    assert status == 400 and set(body) == {"message", "extra"}
    assert body["extra"]["line"] == 5  # where the reader found the list unclosed
    assert str(body["message"]).startswith("line 5: not valid YAML")
    assert body["extra"]["fields"] == {"text": [body["message"]]}


def test_bad_json_names_the_line(api: Api, alice: User) -> None:
    status, body = parse(api, alice, '{\n  "training": {"max_steps": 3,}\n}')
    assert status == 400 and body["extra"]["line"] == 2


def test_aliases_and_anchors_are_refused_with_the_line(api: Api, alice: User) -> None:
    status, body = parse(api, alice, "base: &b\n  learning_rate: 0.1\ntraining: *b\n")
    assert status == 400
    assert "anchors and aliases" in str(body["message"]) and body["extra"]["line"] == 1
    laughs = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
    assert parse(api, alice, laughs)[0] == 400


def test_text_over_the_limit_is_refused_before_it_is_read(api: Api, alice: User) -> None:
    text = "note: '" + "x" * MAX_CONFIG_TEXT_BYTES + "'\n"
    status, body = parse(api, alice, text)
    assert status == 400
    assert "at most 256 KB" in str(body["message"]) and body["extra"]["line"] is None


def test_text_that_is_not_a_mapping_is_refused(api: Api, alice: User) -> None:
    for text, shown in [
        ("- a\n- b\n", "a list"),
        ("just words", "a str"),
        ("", "nothing"),
        ("[1, 2]", "a list"),
    ]:
        status, body = parse(api, alice, text)
        assert status == 400, text
        assert f"this text holds {shown}" in str(body["message"]), text


def test_a_character_yaml_does_not_allow_names_its_line(api: Api, alice: User) -> None:
    status, body = parse(api, alice, "a: 1\nb: \x8e\n")
    assert status == 400 and body["extra"]["line"] == 2
    assert "special characters are not allowed" in body["message"]


def test_a_nul_in_the_text_is_refused(api: Api, alice: User) -> None:
    status, body = parse(api, alice, 'name: "a\\0b"\n')
    assert status == 400 and "NUL" in str(body["message"])


def test_signed_out_clients_cannot_use_it(api: Api, db: None) -> None:
    assert parse(api, None, "a: 1")[0] == 401


def test_a_config_is_written_as_yaml_in_its_own_order_and_reads_back(api: Api, alice: User) -> None:
    config = {
        "name": "run",
        "training": {"max_steps": 3},
        "teacher": {"privileged_template": "Answer: {answer}\n{prompt}"},
    }
    response = api(alice).post("/api/configs/yaml/", {"config": config}, format="json")
    assert response.status_code == 200
    text = response.json()["yaml"]
    assert text.startswith("name: run\ntraining:\n  max_steps: 3\n")
    assert "privileged_template: |-\n" in text  # multi-line text as a block
    assert yaml.safe_load(text) == config
    assert parse(api, alice, text) == (200, {"config": config})


def test_writing_yaml_needs_a_mapping(api: Api, alice: User) -> None:
    response = api(alice).post("/api/configs/yaml/", {"config": [1, 2]}, format="json")
    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {
        "config": ["The config must be an object of sections, got list."]
    }
