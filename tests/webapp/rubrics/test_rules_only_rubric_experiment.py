"""A rubric scored by rules only names no judge model (rubric.judge_model.name_or_path is null): an experiment with
it saves, updates and launches over the API, and the worker's config keeps the judge model unset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.config_paths import run_config_for_worker
from webapp.experiments.models import Run
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def test_an_experiment_with_a_rules_only_rubric_saves_and_launches(
    api: Api, project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    client = api(alice)
    rubric_payload["criteria"] = [c for c in rubric_payload["criteria"] if c["scorer"] != "judge"]
    made = client.post(f"/api/projects/{project.pk}/rubrics/", rubric_payload, format="json")
    assert made.status_code == 201, made.json()
    section = made.json()["config"]
    config = {**SMALL_CONFIG, "rubric": section}
    saved = client.post(
        f"/api/projects/{project.pk}/experiments/", {"name": "rules only", "config": config}, format="json"
    )
    assert saved.status_code == 201, saved.json()
    stored = saved.json()["config"]["rubric"]
    assert stored["judge_model"]["name_or_path"] is None
    assert [c["name"] for c in stored["criteria"]] == ["correct", "boxed", "tone"]
    experiment = saved.json()["id"]
    edited = client.patch(
        f"/api/experiments/{experiment}/",
        {"config": {**config, "rubric": {**section, "reward_weight": 0.5}}},
        format="json",
    )
    assert edited.status_code == 200, edited.json()
    launched = client.post(f"/api/experiments/{experiment}/runs/")
    assert launched.status_code == 201, launched.json()
    worker = run_config_for_worker(run=Run.objects.get(pk=launched.json()["id"]))
    assert (
        worker["rubric"]["judge_model"]["name_or_path"] is None and worker["rubric"]["reward_weight"] == 0.5
    )


def test_a_judged_criterion_without_a_judge_model_is_refused_naming_the_field(
    api: Api, project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    made = api(alice).post(f"/api/projects/{project.pk}/rubrics/", rubric_payload, format="json")
    config = {**SMALL_CONFIG, "rubric": made.json()["config"]}  # 'clarity' is judged; no judge model named
    resp = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "judged", "config": config}, format="json"
    )
    assert resp.status_code == 400
    assert "judge_model.name_or_path is not set" in resp.json()["message"], resp.json()
