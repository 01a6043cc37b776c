"""Reward sources in configs name only what their project may use: rm:<id> of the project's own scalar versions
(resolved to the checkpoint folder for the worker), a checkpoint of the project, a folder under the model roots or
a tiny: model; a judge only at an endpoint the deployment lists, with its key a secret of the project (at launch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.helpers import SMALL_CONFIG
from tests.webapp.rewards.helpers import JUDGE_URL, judge_params
from webapp.core.errors import InvalidInput
from webapp.experiments.config_paths import (
    confine_benchmark_config,
    confine_experiment_config,
    judge_secret_names,
    references,
    url_on_list,
)
from webapp.experiments.config_validation import validate_experiment_config
from webapp.rewards.models import ProjectSecret, RewardModel, RewardModelVersion
from webapp.rewards.services import reward_model_create, version_create_judge, version_create_scalar
from webapp.teams.models import Project
from webapp.teams.services import project_create

FIELD = "config.verifiers.1.params.model"


def config_with(entry: dict[str, Any]) -> dict[str, Any]:
    return validate_experiment_config({**SMALL_CONFIG, "verifiers": [{"name": "exact"}, entry]})


def rm_entry(model: str) -> dict[str, Any]:
    return {"name": "reward_model", "params": {"model": model}}


@pytest.fixture
def scalar(reward_model: RewardModel, alice: User, rm_folder: Path) -> RewardModelVersion:
    return version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))


def test_an_rm_reference_of_the_project_resolves_to_its_folder(
    project: Project, scalar: RewardModelVersion, rm_folder: Path
) -> None:
    config = config_with(scalar.config_entry)
    assert confine_experiment_config(config, project=project) == config  # saved as written
    resolved = confine_experiment_config(config, project=project, resolve=True)
    assert resolved["verifiers"][1]["params"]["model"] == str(rm_folder.resolve())
    assert references(config, resolved)[str(rm_folder.resolve())] == f"rm:{scalar.pk}"


def test_an_rm_reference_of_another_project_is_refused(
    alice: User, project: Project, scalar: RewardModelVersion
) -> None:
    elsewhere = project_create(name="Other", owner=alice)
    with pytest.raises(InvalidInput, match="not a scalar reward-model version of this project") as caught:
        confine_experiment_config(config_with(scalar.config_entry), project=elsewhere)
    assert list(caught.value.fields) == [FIELD]


def test_a_judge_version_is_not_a_scalar_model(
    alice: User, project: Project, judges_allowed: str, secret: ProjectSecret
) -> None:
    judge = version_create_judge(
        reward_model=reward_model_create(project=project, actor=alice, name="judge"), actor=alice,
        params=judge_params(),
    )  # fmt: skip
    with pytest.raises(InvalidInput) as caught:
        confine_experiment_config(config_with(rm_entry(f"rm:{judge.pk}")), project=project)
    assert list(caught.value.fields) == [FIELD]


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("/etc", "outside the allowed model folders"),
        ("../../etc", "outside the allowed model folders"),
        ("checkpoint:999999", "not a checkpoint of a run in this project"),
        ("rm:abc", "not a scalar reward-model version"),
        ("tiny:../x", "not a built-in tiny: model name"),
    ],
)
def test_other_models_are_refused_keyed_by_the_field(
    project: Project, model_root: Path, model: str, why: str
) -> None:
    with pytest.raises(InvalidInput, match=why) as caught:
        confine_experiment_config(config_with(rm_entry(model)), project=project)
    assert list(caught.value.fields) == [FIELD]


def test_a_folder_under_a_root_and_a_tiny_name_are_accepted(
    project: Project, rm_folder: Path, model_root: Path
) -> None:
    for model in ("chain-rm", str(rm_folder), "tiny:chain"):
        confine_experiment_config(config_with(rm_entry(model)), project=project)
    resolved = confine_experiment_config(config_with(rm_entry("chain-rm")), project=project, resolve=True)
    assert resolved["verifiers"][1]["params"]["model"] == str(rm_folder.resolve())


def test_a_version_of_a_tiny_model_resolves_to_its_name(
    project: Project, reward_model: RewardModel, alice: User
) -> None:
    version = version_create_scalar(reward_model=reward_model, actor=alice, model="tiny:chain")
    resolved = confine_experiment_config(config_with(version.config_entry), project=project, resolve=True)
    assert resolved["verifiers"][1]["params"]["model"] == "tiny:chain"


def test_a_judge_endpoint_must_be_listed(project: Project, settings: SettingsWrapper) -> None:
    config = config_with({"name": "judge", "params": judge_params(api_key_secret=None)})
    with pytest.raises(InvalidInput, match="none are configured: the server's administrator sets") as caught:
        confine_experiment_config(config, project=project)
    assert list(caught.value.fields) == ["config.verifiers.1.params.base_url"]
    settings.RLVR_JUDGE_ENDPOINTS = ["http://judge.internal:8000"]
    confine_experiment_config(config, project=project)  # the listed prefix covers /v1


def test_a_judge_key_must_exist_at_launch_not_at_save(
    project: Project, judges_allowed: str, alice: User
) -> None:
    config = config_with({"name": "judge", "params": judge_params()})
    confine_experiment_config(config, project=project)  # saved before the secret is set
    with pytest.raises(InvalidInput, match="no secret named 'OPENAI_KEY'") as caught:
        confine_experiment_config(config, project=project, resolve=True)
    assert list(caught.value.fields) == ["config.verifiers.1.params.api_key_secret"]
    ProjectSecret.objects.create(project=project, name="OPENAI_KEY", ciphertext=b"x")
    confine_experiment_config(config, project=project, resolve=True)
    assert judge_secret_names(config) == ["OPENAI_KEY"]


def test_every_refused_source_is_reported_at_once(project: Project, model_root: Path) -> None:
    config = validate_experiment_config(
        {**SMALL_CONFIG, "verifiers": [rm_entry("/etc"), {"name": "judge", "params": judge_params()}]}
    )
    with pytest.raises(InvalidInput) as caught:
        confine_experiment_config(config, project=project)
    assert set(caught.value.fields) == {
        "config.verifiers.0.params.model",
        "config.verifiers.1.params.base_url",
    }


def test_benchmark_configs_are_confined_the_same_way(project: Project, model_root: Path) -> None:
    config = {"verifiers": [rm_entry("/etc")]}
    with pytest.raises(InvalidInput) as caught:
        confine_benchmark_config(config, project=project)
    assert list(caught.value.fields) == ["config.verifiers.0.params.model"]
    inline = validate_experiment_config(SMALL_CONFIG)
    inline["evaluation"]["benchmarks"] = [
        {"name": "b", "verifiers": [{"name": "judge", "params": judge_params()}]}
    ]
    with pytest.raises(InvalidInput) as caught:
        confine_experiment_config(inline, project=project)
    assert list(caught.value.fields) == ["config.evaluation.benchmarks.0.verifiers.0.params.base_url"]


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        (JUDGE_URL, True),
        (JUDGE_URL + "/", True),
        ("http://judge.internal:8000/v1/chat", True),
        ("http://judge.internal:8000/v12", False),  # whole segments only
        ("http://judge.internal:8000/v1/../admin", False),
        ("http://judge.internal:8000/v1/%2e%2e/admin", False),
        ("https://judge.internal:8000/v1", False),  # another scheme
        ("http://judge.internal:8001/v1", False),
        ("http://judge.internal.evil.com:8000/v1", False),
        ("http://user:pw@judge.internal:8000/v1", False),
        ("http://judge.internal:99999/v1", False),
    ],
)
def test_the_allow_list_rule(url: str, allowed: bool) -> None:
    assert url_on_list(url, [JUDGE_URL]) is allowed


def test_a_default_port_matches_an_explicit_one() -> None:
    assert url_on_list("https://api.example.com/v1", ["https://api.example.com:443/v1"])
    assert not url_on_list("https://api.example.com/v1", [])
