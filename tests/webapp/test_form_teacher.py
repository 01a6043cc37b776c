"""The teacher section (OPD / OPSD / fusion) and the ECR / answer-span fields in the schema-generated form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.pages.forms_config import ConfigField, config_fields, config_sections
from webapp.pages.forms_editors import editor_specs
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def fields(config: dict[str, Any] | None = None) -> dict[str, ConfigField]:
    return config_fields(config=config)


def choices(path: str) -> dict[str, dict[str, Any]]:
    """The editor's choices for a method field (one choice, or each entry of a list), by name, in order."""
    spec = editor_specs()[path]
    return {c["name"]: c for c in (spec["item"] if spec["kind"] == "list" else spec)["choices"]}


def test_the_teacher_section_is_generated_with_its_inputs() -> None:
    sections = {s.key: s for s in config_sections()}
    assert "teacher" in sections and "OPD" in sections["teacher"].help
    f = fields()
    assert f["teacher.fusion"].kind == "editor" and editor_specs()["teacher.fusion"]["kind"] == "method"
    assert list(choices("teacher.fusion")) == [
        "none",
        "additive",
        "modulated",
        "opd",
        "puu",
    ]  # the default first
    assert f["teacher.mode"].choices == ("external", "self")
    assert f["teacher.name_or_path"].kind == "text" and f["teacher.name_or_path"].nullable
    assert choices("teacher.fusion")["opd"]["defaults"] == {"coef": 1.0, "until_step": None}
    assert (
        f["algorithm.loss_masks"].kind == "editor"
        and choices("algorithm.loss_masks")["answer_span"]["description"]
    )
    assert [p["key"] for p in choices("algorithm.loss_masks")["answer_span"]["fields"]] == ["pattern"]
    assert choices("algorithm.token_credit")["ecr"]["defaults"] == {"strength": 1.0, "min_weight": 0.1}


def test_the_opd_params_describe_the_opd_then_rl_switch() -> None:
    saved = {
        "teacher": {
            "name_or_path": "tiny:addition-teacher",
            "fusion": {"name": "opd", "params": {"until_step": 5}},
        }
    }
    assert fields(saved)["teacher.fusion"].value == {"name": "opd", "params": {"until_step": 5}}
    until = {p["key"]: p for p in choices("teacher.fusion")["opd"]["fields"]}["until_step"]
    assert until["help"].startswith("OPD-then-RL") and until["nullable"] and until["kind"] == "integer"


def test_the_api_refuses_an_opd_switch_before_the_first_step(api: Api, project: Project, alice: User) -> None:
    teacher = {
        "name_or_path": "tiny:addition-teacher",
        "fusion": {"name": "opd", "params": {"until_step": 0}},
    }
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/",
        {"name": "opd", "config": {**SMALL_CONFIG, "teacher": teacher}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {
        "config.teacher.fusion.params.until_step": ["Input should be greater than or equal to 1"]
    }


def test_the_new_experiment_page_shows_the_teacher_inputs_with_their_help(
    alice: User, project: Project
) -> None:
    client = Client()
    client.force_login(alice)  # alice owns the project
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="teacher.fusion"' in html and 'data-editor="teacher.fusion"' in html
    assert 'data-path="teacher.privileged_template"' in html
    assert 'data-path="algorithm.loss_masks"' in html
    assert "PUU (UECR-GRPO)" in html


def test_the_api_refuses_fusion_without_a_teacher_and_says_how_to_fix_it(
    api: Api, project: Project, alice: User
) -> None:
    config = {**SMALL_CONFIG, "teacher": {"fusion": "opd"}}
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "opd", "config": config}, format="json"
    )
    assert response.status_code == 400
    assert "teacher.fusion 'opd' needs a teacher: set teacher.name_or_path" in response.json()["message"]


def test_the_api_accepts_uecr_grpo(api: Api, project: Project, alice: User) -> None:
    config = {
        **SMALL_CONFIG,
        "teacher": {"name_or_path": "tiny:addition-teacher", "fusion": "puu"},
        "algorithm": {"token_credit": "ecr", "loss_masks": [{"name": "answer_span"}]},
    }
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "uecr", "config": config}, format="json"
    )
    assert response.status_code == 201, response.json()
    saved = response.json()["config"]
    assert saved["teacher"]["fusion"] == {"name": "puu", "params": {"coef": 0.1}}
    assert saved["algorithm"]["token_credit"] == {
        "name": "ecr",
        "params": {"strength": 1.0, "min_weight": 0.1},
    }
    assert [m["name"] for m in saved["algorithm"]["loss_masks"]] == ["answer_span"]
