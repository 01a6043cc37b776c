"""A config's step scorer names only what its project may use: ``process_reward.scorer.params.model`` (of the prm
scorer, or of any scorer with that param) is rm:<id> of the project's own PRM versions (resolved to the checkpoint
folder for the worker), a checkpoint of the project, a folder under the model roots or a tiny: model; a scalar
reward model's rm:<id> is refused there, and a PRM's as a reward_model verifier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from tests.webapp.rewards.helpers import write_checkpoint
from webapp.core.errors import InvalidInput
from webapp.experiments.config_paths import confine_experiment_config, references
from webapp.experiments.config_validation import validate_experiment_config
from webapp.rewards.models import RewardModel, RewardModelVersion
from webapp.rewards.services import reward_model_create, version_create_prm, version_create_scalar
from webapp.teams.models import Project
from webapp.teams.services import project_create

FIELD = "config.process_reward.scorer.params.model"


def with_scorer(model: str | None, scorer: str = "prm") -> dict[str, Any]:
    params = {} if model is None else {"model": model}
    return validate_experiment_config(
        {**SMALL_CONFIG, "process_reward": {"scorer": {"name": scorer, "params": params}}}
    )


@pytest.fixture
def prm_folder(model_root: Path) -> Path:
    return write_checkpoint(model_root / "chain-prm", architecture="Qwen2ForTokenClassification", labels=2)


@pytest.fixture
def prm(alice: User, project: Project, prm_folder: Path) -> RewardModelVersion:
    slot = reward_model_create(project=project, actor=alice, name="chain PRM")
    return version_create_prm(reward_model=slot, actor=alice, model=str(prm_folder))


def test_a_prm_versions_reference_resolves_to_its_folder(
    project: Project, prm: RewardModelVersion, prm_folder: Path
) -> None:
    config = validate_experiment_config({**SMALL_CONFIG, **prm.config_entry})
    assert config["process_reward"]["scorer"]["params"]["model"] == f"rm:{prm.pk}"
    assert confine_experiment_config(config, project=project) == config  # saved as written
    resolved = confine_experiment_config(config, project=project, resolve=True)
    assert resolved["process_reward"]["scorer"]["params"]["model"] == str(prm_folder.resolve())
    assert references(config, resolved)[str(prm_folder.resolve())] == f"rm:{prm.pk}"


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("/etc", "outside the allowed model folders"),
        ("../../etc", "outside the allowed model folders"),
        ("checkpoint:999999", "not a checkpoint of a run in this project"),
        ("rm:999999", "not a process reward model version of this project"),
        ("tiny:../x", "not a built-in tiny: model name"),
    ],
)
def test_other_models_are_refused_keyed_by_the_field(
    project: Project, model_root: Path, model: str, why: str
) -> None:
    with pytest.raises(InvalidInput, match=why) as caught:
        confine_experiment_config(with_scorer(model), project=project)
    assert list(caught.value.fields) == [FIELD]


def test_a_prm_of_another_project_is_refused(alice: User, prm: RewardModelVersion) -> None:
    elsewhere = project_create(name="Other", owner=alice)
    with pytest.raises(InvalidInput, match="not a process reward model version of this project") as caught:
        confine_experiment_config(with_scorer(f"rm:{prm.pk}"), project=elsewhere, resolve=True)
    assert list(caught.value.fields) == [FIELD]


def test_a_scalar_reward_model_is_not_a_prm(
    project: Project, reward_model: RewardModel, alice: User, rm_folder: Path
) -> None:
    scalar = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    with pytest.raises(
        InvalidInput, match="is a scalar version, not a process reward model version"
    ) as caught:
        confine_experiment_config(with_scorer(f"rm:{scalar.pk}"), project=project)
    assert list(caught.value.fields) == [FIELD]


def test_a_prm_is_not_a_reward_model_verifier(project: Project, prm: RewardModelVersion) -> None:
    config = validate_experiment_config(
        {**SMALL_CONFIG, "verifiers": [{"name": "reward_model", "params": {"model": f"rm:{prm.pk}"}}]}
    )
    with pytest.raises(InvalidInput, match=r"as the config.s process_reward\.scorer \(name: prm") as caught:
        confine_experiment_config(config, project=project)
    assert list(caught.value.fields) == ["config.verifiers.0.params.model"]


def test_any_scorers_model_param_is_confined_and_an_absent_one_is_not(
    project: Project, prm: RewardModelVersion, prm_folder: Path
) -> None:
    with pytest.raises(InvalidInput, match="outside the allowed model folders") as caught:
        confine_experiment_config(with_scorer("/etc", scorer="implicit"), project=project)
    assert list(caught.value.fields) == [FIELD]
    resolved = confine_experiment_config(
        with_scorer(f"rm:{prm.pk}", "implicit"), project=project, resolve=True
    )
    assert resolved["process_reward"]["scorer"]["params"]["model"] == str(prm_folder.resolve())
    confine_experiment_config(with_scorer(None, scorer="implicit"), project=project, resolve=True)
    confine_experiment_config(with_scorer(None, scorer="oracle_chain"), project=project, resolve=True)


def test_saving_an_experiment_over_the_api_refuses_a_prm_outside_the_roots_in_the_one_error_shape(
    alice: User, project: Project, model_root: Path
) -> None:
    client = APIClient()
    client.force_authenticate(user=alice)
    body = {"name": "prm", "config": {**SMALL_CONFIG, "process_reward": {"scorer": {"name": "prm",
                                                                                   "params": {"model": "/etc"}}}}}  # fmt: skip
    resp = client.post(f"/api/projects/{project.pk}/experiments/", body, format="json")
    assert resp.status_code == 400, resp.json()
    assert set(resp.json()) == {"message", "extra"} and FIELD in resp.json()["extra"]["fields"], resp.json()
