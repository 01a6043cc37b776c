"""The teacher section (OPD / OPSD / fusion) and the ECR / answer-span fields in the schema-generated form."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.pages.forms_config import ConfigField, config_sections
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def fields(config: dict[str, Any] | None = None) -> dict[str, ConfigField]:
    return {f.path: f for section in config_sections(config=config) for f in section.fields}


def default_params(select: ConfigField) -> dict[str, Any]:
    """Each option's default params, as the select's data-params carry them."""
    return {name: json.loads(params) for name, _, params, _ in select.options}


def test_the_teacher_section_is_generated_with_its_inputs() -> None:
    sections = {s.key: s for s in config_sections()}
    assert "teacher" in sections and "OPD" in sections["teacher"].help
    f = fields()
    assert f["teacher.fusion.name"].kind == "select" and f["teacher.fusion.params"].kind == "json"
    assert f["teacher.fusion.name"].choices == ("none", "additive", "modulated", "opd", "puu")  # the default first
    assert f["teacher.mode"].choices == ("external", "self")
    assert f["teacher.name_or_path"].kind == "text" and f["teacher.name_or_path"].nullable
    assert default_params(f["teacher.fusion.name"])["opd"] == {"coef": 1.0, "until_step": None}
    assert f["algorithm.loss_masks"].kind == "json" and dict(f["algorithm.loss_masks"].choice_help)["answer_span"]
    assert "pattern (" in f["algorithm.loss_masks"].help
    assert default_params(f["algorithm.token_credit.name"])["ecr"] == {"strength": 1.0, "min_weight": 0.1}


def test_the_opd_params_area_describes_the_opd_then_rl_switch() -> None:
    saved = {"teacher": {"name_or_path": "tiny:addition-teacher", "fusion": {"name": "opd", "params": {"until_step": 5}}}}
    params = fields(saved)["teacher.fusion.params"]
    assert params.value == {"until_step": 5}
    assert "until_step (OPD-then-RL" in params.help


def test_the_api_refuses_an_opd_switch_before_the_first_step(api: Api, project: Project, alice: User) -> None:
    teacher = {"name_or_path": "tiny:addition-teacher", "fusion": {"name": "opd", "params": {"until_step": 0}}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/",
                               {"name": "opd", "config": {**SMALL_CONFIG, "teacher": teacher}}, format="json")
    assert response.status_code == 400
    assert "params.until_step: Input should be greater than or equal to 1" in (
        response.json()["extra"]["fields"]["config.teacher.fusion.params"][0]
    )


def test_the_new_experiment_page_shows_the_teacher_inputs_with_their_help(alice: User, project: Project) -> None:
    client = Client()
    client.force_login(alice)  # alice owns the project
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="teacher.fusion.name"' in html and 'data-path="teacher.fusion.params"' in html
    assert 'data-path="teacher.privileged_template"' in html
    assert 'data-path="algorithm.loss_masks"' in html
    assert "<dt>puu</dt><dd>PUU (UECR-GRPO)" in html


def test_the_api_refuses_fusion_without_a_teacher_and_says_how_to_fix_it(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "teacher": {"fusion": "opd"}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "opd", "config": config}, format="json")
    assert response.status_code == 400
    assert "teacher.fusion 'opd' needs a teacher: set teacher.name_or_path" in response.json()["message"]


def test_the_api_accepts_uecr_grpo(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "teacher": {"name_or_path": "tiny:addition-teacher", "fusion": "puu"},
              "algorithm": {"token_credit": "ecr", "loss_masks": [{"name": "answer_span"}]}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "uecr", "config": config}, format="json")
    assert response.status_code == 201, response.json()
    saved = response.json()["config"]
    assert saved["teacher"]["fusion"] == {"name": "puu", "params": {"coef": 0.1}}
    assert saved["algorithm"]["token_credit"] == {"name": "ecr", "params": {"strength": 1.0, "min_weight": 0.1}}
    assert [m["name"] for m in saved["algorithm"]["loss_masks"]] == ["answer_span"]
