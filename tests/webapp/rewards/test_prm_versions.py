"""Process reward model versions: from a token-classification checkpoint or a causal LM of the project's allowed
folders (read from config.json), validated by the prm step scorer's own schema; their config entry is the
process_reward snippet, never a verifiers entry; a reward model holds PRMs or outcome sources, never both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.rewards.helpers import write_checkpoint
from webapp.core.errors import Conflict, InvalidInput
from webapp.experiments.models import Run
from webapp.rewards.models import RewardModel, RewardModelVersion, SourceKind
from webapp.rewards.services import (
    reward_model_create,
    reward_model_delete,
    version_create_prm,
    version_create_scalar,
    version_create_trained,
)
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


@pytest.fixture
def prm_folder(model_root: Path) -> Path:
    return write_checkpoint(model_root / "chain-prm", architecture="Qwen2ForTokenClassification", labels=2)


@pytest.fixture
def prm_model(project: Project, alice: User) -> RewardModel:
    return reward_model_create(project=project, actor=alice, name="chain PRM")


@pytest.fixture
def prm(prm_model: RewardModel, alice: User, prm_folder: Path) -> RewardModelVersion:
    return version_create_prm(
        reward_model=prm_model, actor=alice, model="chain-prm", params={"max_length": 256}
    )


def test_a_prm_version_stores_validated_params_and_gives_the_process_reward_snippet(
    prm: RewardModelVersion, prm_folder: Path
) -> None:
    assert (prm.kind, prm.origin, prm.number, prm.folder) == ("prm", "folder", 1, str(prm_folder.resolve()))
    assert prm.params["max_length"] == 256 and prm.params["positive_label"] == 1  # defaults filled in
    assert prm.config_entry == {
        "process_reward": {"scorer": {"name": "prm", "params": {**prm.params, "model": f"rm:{prm.pk}"}}}
    }


def test_a_causal_lm_is_a_prm_scored_math_shepherd_style(
    prm_model: RewardModel, alice: User, model_root: Path
) -> None:
    write_checkpoint(model_root / "shepherd", architecture="MistralForCausalLM", labels=0)
    version = version_create_prm(
        reward_model=prm_model, actor=alice, model="shepherd", params={"kind": "causal_lm", "step_tag": "ки"}
    )
    assert version.params["kind"] == "causal_lm" and version.params["step_tag"] == "ки"


@pytest.mark.parametrize(
    ("architecture", "params", "expected", "field"),
    [
        (
            "Qwen2ForSequenceClassification",
            {},
            "a scalar reward model: add it to a scalar reward model",
            "model",
        ),
        ("BertModel", {}, "neither a token-classification checkpoint nor a causal language model", "model"),
        ("Qwen2ForCausalLM", {"kind": "token_classification"}, "set kind to auto", "params.kind"),
        ("Qwen2ForTokenClassification", {"max_length": 1}, "greater than or equal to 8", "params.max_length"),
    ],
)
def test_a_folder_that_is_not_a_prm_is_refused_saying_why(
    prm_model: RewardModel, alice: User, model_root: Path, architecture: str, params: dict[str, object],
    expected: str, field: str,
) -> None:  # fmt: skip
    write_checkpoint(model_root / "other", architecture=architecture, labels=2)
    with pytest.raises(InvalidInput, match=expected) as caught:
        version_create_prm(reward_model=prm_model, actor=alice, model="other", params=params)
    assert field in caught.value.fields


def test_a_folder_outside_the_model_roots_is_refused(
    prm_model: RewardModel, alice: User, model_root: Path
) -> None:
    for model in ("/etc", "../../etc", "rm:1"):
        with pytest.raises(InvalidInput) as caught:
            version_create_prm(reward_model=prm_model, actor=alice, model=model)
        assert "model" in caught.value.fields


def test_a_reward_model_holds_prms_or_outcome_sources_never_both(
    prm: RewardModelVersion, prm_model: RewardModel, reward_model: RewardModel, alice: User, rm_folder: Path,
    prm_folder: Path,
) -> None:  # fmt: skip
    with pytest.raises(InvalidInput, match="holds process reward model versions"):
        version_create_scalar(reward_model=prm_model, actor=alice, model=str(rm_folder))
    version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    with pytest.raises(InvalidInput, match="holds scalar or judge versions"):
        version_create_prm(reward_model=reward_model, actor=alice, model=str(prm_folder))


def test_a_trained_prm_version_records_its_folder_and_figures(
    prm_model: RewardModel, alice: User, tmp_path: Path
) -> None:
    folder = write_checkpoint(
        tmp_path / "reward-models" / "job-1", architecture="Qwen2ForTokenClassification"
    )
    version = version_create_trained(
        prm_model, folder, {"kind": "token_classification", "max_length": 128}, None,
        {"held_out_step_accuracy": 0.8}, alice, kind=SourceKind.PRM,
    )  # fmt: skip
    assert (version.kind, version.origin, version.folder) == ("prm", "trained", str(folder.resolve()))
    assert version.params["max_length"] == 128 and version.metrics == {"held_out_step_accuracy": 0.8}


def test_the_api_adds_a_prm_version_and_shows_its_reference_not_its_folder(
    api: Api, alice: User, prm_model: RewardModel, prm_folder: Path
) -> None:
    resp = api(alice).post(
        f"/api/reward-models/{prm_model.pk}/versions/", {"kind": "prm", "model": "chain-prm"}, format="json"
    )
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["kind"] == "prm" and body["params"]["model"] == f"rm:{body['id']}"
    assert body["config_entry"]["process_reward"]["scorer"]["params"]["model"] == f"rm:{body['id']}"
    assert str(prm_folder) not in str(body)
    missing = api(alice).post(f"/api/reward-models/{prm_model.pk}/versions/", {"kind": "prm"}, format="json")
    assert missing.status_code == 400 and "model" in missing.json()["extra"]["fields"]


def test_a_prm_that_scored_a_run_keeps_its_reward_model(
    prm: RewardModelVersion, prm_model: RewardModel, alice: User, run: Run
) -> None:
    config = {**run.config, **prm.config_entry}
    Run.objects.filter(pk=run.pk).update(config=config)
    with pytest.raises(Conflict, match="1 run"):
        reward_model_delete(reward_model=prm_model, actor=alice)


def test_the_version_page_shows_the_process_reward_snippet_and_the_figures(
    alice: User, prm_model: RewardModel, tmp_path: Path
) -> None:
    folder = write_checkpoint(tmp_path / "job-9", architecture="Qwen2ForTokenClassification")
    metrics = {"held_out_step_accuracy": 0.875, "majority_step_accuracy": 0.6, "held_out_steps": 40,
               "held_out_first_error_f1": 0.5}  # fmt: skip
    version = version_create_trained(prm_model, folder, {}, None, metrics, alice, kind=SourceKind.PRM)
    client = Client()
    client.force_login(alice)
    body = client.get(f"/reward-model-versions/{version.pk}/").content.decode()
    assert "process_reward:" in body and "name: prm" in body and f"model: rm:{version.pk}" in body
    assert "verifiers:" not in body and str(folder) not in body
    assert "Held-out step accuracy <strong>0.875</strong> (majority class 0.600) on 40 steps" in body
    detail = client.get(f"/reward-models/{prm_model.pk}/").content.decode()
    assert 'id="rm-prm-form"' in detail and 'id="rm-scalar-form"' not in detail


def test_a_prm_version_from_the_page(alice: User, prm_model: RewardModel, prm_folder: Path) -> None:
    client = Client()
    client.force_login(alice)
    resp = client.post(
        f"/reward-models/{prm_model.pk}/",
        {"kind": "prm", "model": "chain-prm", "params": '{"max_length": 64}'},
    )
    version = RewardModelVersion.objects.get(reward_model=prm_model)
    assert resp.status_code == 302 and resp["Location"] == f"/reward-model-versions/{version.pk}/"
    assert version.kind == "prm" and version.params["max_length"] == 64


def test_the_version_page_shows_a_non_ascii_step_tag_as_written(alice: User, prm: RewardModelVersion) -> None:
    client = Client()
    client.force_login(alice)
    body = client.get(f"/reward-model-versions/{prm.pk}/").content.decode()
    params = body.split('id="rm-version-params">', 1)[1].split("</pre>", 1)[0]
    assert "&quot;step_tag&quot;: &quot;ки&quot;" in params and "\\u043a" not in params
