"""The teacher section (OPD / OPSD / fusion) and the ECR / answer-span fields in the schema-generated form."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.pages.forms_config import config_sections
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def fields() -> dict[str, object]:
    return {f.path: f for section in config_sections() for f in section.fields}


def test_the_teacher_section_is_generated_with_its_inputs() -> None:
    sections = {s.key: s for s in config_sections()}
    assert "teacher" in sections and "OPD" in sections["teacher"].help
    f = fields()
    assert f["teacher.fusion"].kind == "select"  # type: ignore[attr-defined]
    assert f["teacher.fusion"].choices == ("none", "opd", "additive", "modulated", "puu")  # type: ignore[attr-defined]
    assert f["teacher.mode"].choices == ("external", "self")  # type: ignore[attr-defined]
    assert f["teacher.name_or_path"].kind == "text" and f["teacher.name_or_path"].nullable  # type: ignore[attr-defined]
    assert f["teacher.opd_until_step"].kind == "integer" and f["teacher.opd_until_step"].minimum == 1  # type: ignore[attr-defined]
    assert f["algorithm.answer_span_mask"].kind == "checkbox"  # type: ignore[attr-defined]
    assert f["algorithm.ecr_strength"].kind == "number"  # type: ignore[attr-defined]


def test_the_new_experiment_page_shows_the_teacher_inputs_with_their_help(alice: User, project: Project) -> None:
    client = Client()
    client.force_login(alice)  # alice owns the project
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="teacher.fusion"' in html
    assert 'data-path="teacher.privileged_template"' in html
    assert 'data-path="algorithm.answer_span_pattern"' in html
    assert "Path-Utility Unification" in html


def test_the_api_refuses_fusion_without_a_teacher_and_says_how_to_fix_it(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "teacher": {"fusion": "opd"}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "opd", "config": config}, format="json")
    assert response.status_code == 400
    assert "need a teacher: set teacher.name_or_path" in response.json()["message"]


def test_the_api_accepts_uecr_grpo(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "teacher": {"name_or_path": "tiny:addition-teacher", "fusion": "puu"},
              "algorithm": {"token_credit": "ecr", "answer_span_mask": True}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "uecr", "config": config}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["config"]["teacher"]["fusion"] == "puu"
