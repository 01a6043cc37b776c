"""The shaping section and the clip-mode / segment-IS fields in the schema-generated experiment form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.pages.forms_config import ConfigField, config_sections
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def fields(config: dict[str, Any] | None = None) -> dict[str, ConfigField]:
    return {f.path: f for section in config_sections(config=config) for f in section.fields}


def test_the_shaping_section_is_generated_with_its_inputs() -> None:
    sections = {s.key: s for s in config_sections()}
    assert "shaping" in sections and "Rewards without labels" in sections["shaping"].help
    f = fields()
    rewards, advantages = f["shaping.reward_shaping"], f["shaping.advantage_shaping"]
    assert rewards.kind == "json" and rewards.value == []  # no shaping unless a method is listed
    assert [name for name, _ in rewards.choice_help] == [
        "length_penalty", "majority_vote", "overlong_penalty", "soft_consensus"
    ]
    assert "combine (" in rewards.help and "weight (" in rewards.help  # majority_vote's knobs
    assert "buffer (" in rewards.help and "default 4096" in rewards.help  # overlong_penalty's
    assert advantages.kind == "json" and advantages.value == []
    assert [name for name, _ in advantages.choice_help] == ["rarity"]
    assert "cue (" in advantages.help and "cue_pattern (" in advantages.help and "default null" in advantages.help
    assert "strength (" in advantages.help


@pytest.mark.parametrize(
    ("shaping", "message"),
    [
        ({"reward_shaping": [{"name": "majority_vote", "params": {"combine": "multiply"}}]},
         "params.combine: Input should be 'replace' or 'add'"),
        ({"reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 0}}]},
         "params.buffer: Input should be greater than or equal to 1"),
        ({"advantage_shaping": [{"name": "rarity", "params": {"cue": "shape"}}]},
         "params.cue: Input should be 'answer_form', 'completion' or 'regex'"),
        ({"advantage_shaping": [{"name": "rarity", "params": {"strength": 1.5}}]},
         "params.strength: Input should be less than or equal to 1"),
    ],
)
def test_the_api_refuses_shaping_params_out_of_their_range_at_the_list_entry(
    api: Api, project: Project, alice: User, shaping: dict[str, Any], message: str
) -> None:
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/",
                               {"name": "x", "config": {**SMALL_CONFIG, "shaping": shaping}}, format="json")
    assert response.status_code == 400
    (path, messages), = response.json()["extra"]["fields"].items()
    assert path == f"config.shaping.{next(iter(shaping))}.0.params"  # the form shows it under that list's area
    assert message in messages[0]


def test_the_algorithm_section_offers_segment_is_gapo_and_dual_clip() -> None:
    f = fields()
    assert f["algorithm.importance_sampling_level.name"].choices == ("token", "segment", "sequence")  # the default first
    assert f["algorithm.clip_mode.name"].choices == ("fixed", "gapo")
    assert f["algorithm.dual_clip"].kind == "checkbox"
    assert f["algorithm.dual_clip_c"].kind == "number" and "Ye et al. 2020" in f["algorithm.dual_clip_c"].help
    assert dict(f["algorithm.importance_sampling_level.name"].choice_help)["segment"].startswith("HISPO")


def test_a_chosen_methods_params_area_holds_its_params_and_describes_them() -> None:
    config = {"algorithm": {"importance_sampling_level": {"name": "segment", "params": {"boundary_quantile": 0.8}}}}
    f = fields(config)
    params = f["algorithm.importance_sampling_level.params"]
    assert params.kind == "json" and params.value == {"boundary_quantile": 0.8}
    assert "boundary_quantile (" in params.help and "default 0.9" in params.help
    assert f["algorithm.importance_sampling_level.name"].params_for == params.input_id
    assert fields()["algorithm.importance_sampling_level.params"].help == "This method has no parameters."  # token


def test_the_new_experiment_page_shows_the_shaping_inputs_with_their_help(
    alice: User, project: Project
) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="shaping.reward_shaping"' in html
    assert 'data-path="shaping.advantage_shaping"' in html
    assert 'data-path="algorithm.clip_mode.name"' in html and 'data-path="algorithm.clip_mode.params"' in html
    assert "Cue-GRPO" in html and "DAPO soft overlong punishment" in html


LABEL_FREE_SEGMENT: dict[str, Any] = {
    "algorithm": {"importance_sampling_level": {"name": "segment", "params": {"min_tokens": 2}},
                  "clip_mode": "gapo", "dual_clip": True},
    "shaping": {"reward_shaping": [{"name": "majority_vote"}, {"name": "overlong_penalty", "params": {"buffer": 2}}],
                "advantage_shaping": [{"name": "rarity"}]},
}


def test_the_api_accepts_label_free_segment_training(api: Api, project: Project, alice: User) -> None:
    config = {**SMALL_CONFIG, "data": {"source": "demo", "size": 32, "answer_field": None}, **LABEL_FREE_SEGMENT}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "ttrl", "config": config},
                               format="json")
    assert response.status_code == 201, response.json()
    saved = response.json()["config"]
    assert [m["name"] for m in saved["shaping"]["reward_shaping"]] == ["majority_vote", "overlong_penalty"]
    assert saved["shaping"]["reward_shaping"][0]["params"]["combine"] == "replace"  # defaults filled in
    assert saved["algorithm"]["importance_sampling_level"]["params"]["min_tokens"] == 2


def test_the_api_still_accepts_the_old_flat_knobs_and_stores_them_as_params(
    api: Api, project: Project, alice: User
) -> None:
    config = {**SMALL_CONFIG, "data": {"source": "demo", "size": 32, "answer_field": None},
              "algorithm": {"importance_sampling_level": "segment", "segment_min_tokens": 2, "clip_mode": "gapo",
                            "dual_clip": True},
              "shaping": {"label_free_reward": "majority_vote", "overlong_buffer": 2, "rarity_redistribution": True}}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "ttrl", "config": config},
                               format="json")
    assert response.status_code == 201, response.json()
    saved = response.json()["config"]
    assert [m["name"] for m in saved["shaping"]["reward_shaping"]] == ["majority_vote", "overlong_penalty"]
    assert saved["shaping"]["reward_shaping"][1]["params"]["buffer"] == 2
    assert [m["name"] for m in saved["shaping"]["advantage_shaping"]] == ["rarity"]
    assert saved["algorithm"]["importance_sampling_level"]["params"]["min_tokens"] == 2
    assert "label_free_reward" not in saved["shaping"] and "segment_min_tokens" not in saved["algorithm"]


def test_the_api_refuses_an_overlong_buffer_as_long_as_the_completion(api: Api, project: Project, alice: User) -> None:
    shaping = {"reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 4}}]}  # max_completion_length is 4
    config = {**SMALL_CONFIG, "shaping": shaping}
    response = api(alice).post(f"/api/projects/{project.pk}/experiments/", {"name": "x", "config": config},
                               format="json")
    assert response.status_code == 400
    assert (
        "shaping.reward_shaping 'overlong_penalty': buffer (4) must be below rollout.max_completion_length"
        in response.json()["message"]
    )
