"""The shaping section and the clip-mode / segment-IS fields in the schema-generated experiment form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
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


def params(path: str, name: str) -> dict[str, dict[str, Any]]:
    return {f["key"]: f for f in choices(path)[name]["fields"]}


def test_the_shaping_section_is_generated_with_its_editors() -> None:
    sections = {s.key: s for s in config_sections()}
    assert "shaping" in sections and "Rewards without labels" in sections["shaping"].help
    f = fields()
    rewards, advantages = f["shaping.reward_shaping"], f["shaping.advantage_shaping"]
    assert rewards.kind == "editor" and rewards.value == []  # no shaping unless a method is listed
    assert editor_specs()["shaping.reward_shaping"]["kind"] == "list"
    assert list(choices("shaping.reward_shaping")) == [
        "length_penalty",
        "majority_vote",
        "overlong_penalty",
        "soft_consensus",
    ]
    assert {"combine", "weight"} <= set(
        params("shaping.reward_shaping", "majority_vote")
    )  # majority_vote's knobs
    assert params("shaping.reward_shaping", "overlong_penalty")["buffer"]["default"] == 4096
    assert advantages.kind == "editor" and advantages.value == []
    assert list(choices("shaping.advantage_shaping")) == ["rarity"]
    rarity = params("shaping.advantage_shaping", "rarity")
    assert (
        rarity["cue"]["kind"] == "select"
        and rarity["cue_pattern"]["default"] is None
        and "strength" in rarity
    )


@pytest.mark.parametrize(
    ("shaping", "param", "message"),
    [
        (
            {"reward_shaping": [{"name": "majority_vote", "params": {"combine": "multiply"}}]},
            "combine",
            "Input should be 'replace' or 'add'",
        ),
        (
            {"reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 0}}]},
            "buffer",
            "Input should be greater than or equal to 1",
        ),
        (
            {"advantage_shaping": [{"name": "rarity", "params": {"cue": "shape"}}]},
            "cue",
            "Input should be 'answer_form', 'completion' or 'regex'",
        ),
        (
            {"advantage_shaping": [{"name": "rarity", "params": {"strength": 1.5}}]},
            "strength",
            "Input should be less than or equal to 1",
        ),
    ],
)
def test_the_api_refuses_shaping_params_out_of_their_range_at_the_entrys_parameter(
    api: Api, project: Project, alice: User, shaping: dict[str, Any], param: str, message: str
) -> None:
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/",
        {"name": "x", "config": {**SMALL_CONFIG, "shaping": shaping}},
        format="json",
    )
    assert response.status_code == 400
    ((path, messages),) = response.json()["extra"]["fields"].items()
    assert (
        path == f"config.shaping.{next(iter(shaping))}.0.params.{param}"
    )  # the form shows it at that parameter
    assert messages == [message]


def test_the_algorithm_section_offers_segment_is_gapo_and_dual_clip() -> None:
    f = fields()
    assert list(choices("algorithm.importance_sampling_level")) == [
        "token",
        "segment",
        "sequence",
    ]  # the default first
    assert list(choices("algorithm.clip_mode")) == ["fixed", "gapo"]
    assert f["algorithm.dual_clip"].kind == "checkbox"
    assert f["algorithm.dual_clip_c"].kind == "number" and "Ye et al. 2020" in f["algorithm.dual_clip_c"].help
    assert choices("algorithm.importance_sampling_level")["segment"]["description"].startswith("HISPO")


def test_a_chosen_methods_params_are_fields_with_their_help_and_defaults() -> None:
    config = {
        "algorithm": {"importance_sampling_level": {"name": "segment", "params": {"boundary_quantile": 0.8}}}
    }
    f = fields(config)
    assert f["algorithm.importance_sampling_level"].value == {
        "name": "segment",
        "params": {"boundary_quantile": 0.8},
    }
    quantile = params("algorithm.importance_sampling_level", "segment")["boundary_quantile"]
    assert quantile["kind"] == "number" and quantile["default"] == 0.9 and quantile["help"]
    assert choices("algorithm.importance_sampling_level")["token"]["fields"] == []  # no parameters


def test_the_new_experiment_page_shows_the_shaping_editors_with_their_help(
    alice: User, project: Project
) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="shaping.reward_shaping"' in html and 'data-editor="shaping.reward_shaping"' in html
    assert 'data-path="shaping.advantage_shaping"' in html
    assert 'data-path="algorithm.clip_mode"' in html
    assert "Cue-GRPO" in html and "DAPO soft overlong punishment" in html


LABEL_FREE_SEGMENT: dict[str, Any] = {
    "algorithm": {
        "importance_sampling_level": {"name": "segment", "params": {"min_tokens": 2}},
        "clip_mode": "gapo",
        "dual_clip": True,
    },
    "shaping": {
        "reward_shaping": [{"name": "majority_vote"}, {"name": "overlong_penalty", "params": {"buffer": 2}}],
        "advantage_shaping": [{"name": "rarity"}],
    },
}


def test_the_api_accepts_label_free_segment_training(api: Api, project: Project, alice: User) -> None:
    config = {
        **SMALL_CONFIG,
        "data": {"source": "demo", "size": 32, "answer_field": None},
        **LABEL_FREE_SEGMENT,
    }
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "ttrl", "config": config}, format="json"
    )
    assert response.status_code == 201, response.json()
    saved = response.json()["config"]
    assert [m["name"] for m in saved["shaping"]["reward_shaping"]] == ["majority_vote", "overlong_penalty"]
    assert saved["shaping"]["reward_shaping"][0]["params"]["combine"] == "replace"  # defaults filled in
    assert saved["algorithm"]["importance_sampling_level"]["params"]["min_tokens"] == 2


def test_the_api_still_accepts_the_old_flat_knobs_and_stores_them_as_params(
    api: Api, project: Project, alice: User
) -> None:
    config = {
        **SMALL_CONFIG,
        "data": {"source": "demo", "size": 32, "answer_field": None},
        "algorithm": {
            "importance_sampling_level": "segment",
            "segment_min_tokens": 2,
            "clip_mode": "gapo",
            "dual_clip": True,
        },
        "shaping": {
            "label_free_reward": "majority_vote",
            "overlong_buffer": 2,
            "rarity_redistribution": True,
        },
    }
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "ttrl", "config": config}, format="json"
    )
    assert response.status_code == 201, response.json()
    saved = response.json()["config"]
    assert [m["name"] for m in saved["shaping"]["reward_shaping"]] == ["majority_vote", "overlong_penalty"]
    assert saved["shaping"]["reward_shaping"][1]["params"]["buffer"] == 2
    assert [m["name"] for m in saved["shaping"]["advantage_shaping"]] == ["rarity"]
    assert saved["algorithm"]["importance_sampling_level"]["params"]["min_tokens"] == 2
    assert "label_free_reward" not in saved["shaping"] and "segment_min_tokens" not in saved["algorithm"]


def test_the_api_refuses_an_overlong_buffer_as_long_as_the_completion(
    api: Api, project: Project, alice: User
) -> None:
    shaping = {
        "reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 4}}]
    }  # max_completion_length is 4
    config = {**SMALL_CONFIG, "shaping": shaping}
    response = api(alice).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "x", "config": config}, format="json"
    )
    assert response.status_code == 400
    assert (
        "shaping.reward_shaping 'overlong_penalty': buffer (4) must be below rollout.max_completion_length"
        in response.json()["message"]
    )
