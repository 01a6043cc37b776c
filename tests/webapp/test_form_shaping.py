"""The shaping section and the clip-mode / segment-IS fields in the schema-generated experiment form."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.pages.forms_config import ConfigField, config_sections
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def fields() -> dict[str, ConfigField]:
    return {f.path: f for section in config_sections() for f in section.fields}


def test_the_shaping_section_is_generated_with_its_inputs() -> None:
    sections = {s.key: s for s in config_sections()}
    assert "shaping" in sections and "Rewards without labels" in sections["shaping"].help
    f = fields()
    assert f["shaping.label_free_reward"].choices == ("none", "majority_vote", "soft_consensus")
    assert f["shaping.majority_vote_combine"].choices == ("replace", "add")
    assert f["shaping.overlong_buffer"].kind == "integer" and f["shaping.overlong_buffer"].minimum == 0
    assert f["shaping.rarity_redistribution"].kind == "checkbox"
    assert f["shaping.rarity_cue"].choices == ("answer_form", "completion", "regex")
    assert f["shaping.rarity_cue_pattern"].kind == "text" and f["shaping.rarity_cue_pattern"].nullable
    assert f["shaping.rarity_strength"].maximum == 1


def test_the_algorithm_section_offers_segment_is_gapo_and_dual_clip() -> None:
    f = fields()
    assert f["algorithm.importance_sampling_level"].choices == ("token", "sequence", "segment")
    assert f["algorithm.clip_mode"].choices == ("fixed", "gapo")
    assert f["algorithm.dual_clip"].kind == "checkbox"
    assert f["algorithm.dual_clip_c"].kind == "number" and "Ye et al. 2020" in f["algorithm.dual_clip_c"].help
    assert "HISPO" in f["algorithm.segment_boundary_quantile"].help


def test_the_new_experiment_page_shows_the_shaping_inputs_with_their_help(
    alice: User, project: Project
) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="shaping.label_free_reward"' in html
    assert 'data-path="shaping.overlong_buffer"' in html
    assert 'data-path="algorithm.clip_mode"' in html
    assert "Cue-GRPO" in html and "DAPO soft overlong punishment" in html


def test_the_api_accepts_label_free_segment_training(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "data": {"source": "demo", "size": 32, "answer_field": None},
              "algorithm": {"importance_sampling_level": "segment", "segment_min_tokens": 2, "clip_mode": "gapo",
                            "dual_clip": True},
              "shaping": {"label_free_reward": "majority_vote", "overlong_buffer": 2, "rarity_redistribution": True}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "ttrl", "config": config},
                               format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["config"]["shaping"]["label_free_reward"] == "majority_vote"


def test_the_api_refuses_an_overlong_buffer_as_long_as_the_completion(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "shaping": {"overlong_buffer": 4}}  # max_completion_length is 4
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "x", "config": config},
                               format="json")
    assert response.status_code == 400
    assert "overlong_buffer (4) must be below rollout.max_completion_length" in response.json()["message"]
