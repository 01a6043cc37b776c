"""Reward model versions: immutable, numbered, validated by the trainer source's own schema; scalar ones only from a
one-label sequence-classification checkpoint of the project's allowed folders, judge ones only from an allowed
endpoint whose key is a project secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.webapp.rewards.helpers import JUDGE_URL, judge_params, write_checkpoint
from webapp.core.errors import InvalidInput
from webapp.experiments.models import Checkpoint, Run
from webapp.rewards.models import ProjectSecret, RewardModel, RewardModelVersion
from webapp.rewards.services import version_create_judge, version_create_scalar, version_create_trained


def test_a_saved_version_cannot_be_changed_but_its_metrics_can(
    reward_model: RewardModel, alice: User, rm_folder: Path
) -> None:
    version = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    version.params = {**version.params, "micro_batch_size": 1}
    with pytest.raises(ValueError, match="immutable"):
        version.save()
    version.metrics = {"pairwise_accuracy": 0.9}
    version.save(update_fields=["metrics"])
    assert RewardModelVersion.objects.get(pk=version.pk).metrics == {"pairwise_accuracy": 0.9}


def test_a_scalar_version_stores_validated_params_and_its_folder(
    reward_model: RewardModel, alice: User, rm_folder: Path
) -> None:
    v1 = version_create_scalar(
        reward_model=reward_model, actor=alice, model="chain-rm", params={"max_length": 64}
    )
    v2 = version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    assert (v1.number, v2.number) == (1, 2)
    assert v1.folder == str(rm_folder.resolve()) and v1.origin == "folder" and v1.kind == "scalar"
    assert v1.params["max_length"] == 64 and v1.params["micro_batch_size"] == 16  # defaults filled in
    assert v1.config_entry == {
        "name": "reward_model", "params": {**v1.params, "model": f"rm:{v1.pk}"}, "label": v1.config_entry["label"],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("architecture", "labels", "expected"),
    [
        ("Qwen2ForCausalLM", 0, "not a sequence-classification checkpoint"),
        ("Qwen2ForSequenceClassification", 2, "2 labels"),
        ("Qwen2ForSequenceClassification", 0, "2 labels"),  # no id2label: transformers' default of two
    ],
)
def test_a_folder_that_is_not_a_one_label_classifier_is_refused(
    reward_model: RewardModel, alice: User, model_root: Path, architecture: str, labels: int, expected: str
) -> None:
    write_checkpoint(model_root / "other", architecture=architecture, labels=labels)
    with pytest.raises(InvalidInput, match=expected) as caught:
        version_create_scalar(reward_model=reward_model, actor=alice, model="other")
    assert "model" in caught.value.fields
    assert not RewardModelVersion.objects.exists()


def test_a_folder_outside_the_model_roots_is_refused(
    reward_model: RewardModel, alice: User, model_root: Path, tmp_path: Path
) -> None:
    outside = write_checkpoint(tmp_path / "elsewhere")
    with pytest.raises(InvalidInput, match="outside the allowed model folders"):
        version_create_scalar(reward_model=reward_model, actor=alice, model=str(outside))
    with pytest.raises(InvalidInput, match="outside the allowed model folders"):
        version_create_scalar(reward_model=reward_model, actor=alice, model="../elsewhere")


def test_a_run_checkpoint_of_a_policy_is_refused_saying_so(
    reward_model: RewardModel, alice: User, run: Run, model_root: Path, tmp_path: Path
) -> None:
    folder = write_checkpoint(tmp_path / "runs" / "ck", architecture="Qwen2ForCausalLM", labels=0)
    (folder / "model.safetensors").write_bytes(b"x")
    checkpoint = Checkpoint.objects.create(run=run, step=5, path=str(folder))
    with pytest.raises(InvalidInput, match="run checkpoint of a policy"):
        version_create_scalar(reward_model=reward_model, actor=alice, model=f"checkpoint:{checkpoint.pk}")


def test_a_run_checkpoint_that_is_a_reward_model_is_accepted_and_resolved_again_on_the_worker(
    reward_model: RewardModel, alice: User, run: Run, model_root: Path, tmp_path: Path
) -> None:
    from tests.webapp.helpers import SMALL_CONFIG
    from webapp.experiments.config_paths import confine_experiment_config
    from webapp.experiments.config_validation import validate_experiment_config

    folder = write_checkpoint(tmp_path / "runs" / "rm-ck")
    (folder / "model.safetensors").write_bytes(b"x")
    checkpoint = Checkpoint.objects.create(run=run, step=5, path=str(folder))
    version = version_create_scalar(
        reward_model=reward_model, actor=alice, model=f"checkpoint:{checkpoint.pk}"
    )
    assert version.params["model"] == f"checkpoint:{checkpoint.pk}" and version.folder == str(folder)
    config = validate_experiment_config({**SMALL_CONFIG, "verifiers": [version.config_entry]})
    project = reward_model.project
    resolved = confine_experiment_config(config, project=project, resolve=True)
    assert resolved["verifiers"][0]["params"]["model"] == str(folder)
    import shutil

    shutil.rmtree(folder)  # the run's checkpoint rotation deleted it since
    with pytest.raises(InvalidInput, match="has no files on this server any more"):
        confine_experiment_config(config, project=project, resolve=True)


def test_a_checkpoint_of_another_project_is_refused(
    reward_model: RewardModel, alice: User, model_root: Path
) -> None:
    with pytest.raises(InvalidInput, match="not a checkpoint of a run in this project"):
        version_create_scalar(reward_model=reward_model, actor=alice, model="checkpoint:999999")


def test_a_trained_version_records_its_job_folder_and_metrics(
    reward_model: RewardModel, alice: User, tmp_path: Path
) -> None:
    folder = write_checkpoint(tmp_path / "reward-models" / "job-1")
    version = version_create_trained(
        reward_model, folder, {"micro_batch_size": 8}, None, {"accuracy": 0.8}, alice
    )
    assert version.origin == "trained" and version.folder == str(folder.resolve())
    assert version.params["model"] == str(folder.resolve()) and version.metrics == {"accuracy": 0.8}


def test_a_judge_needs_an_allowed_endpoint(
    reward_model: RewardModel, alice: User, secret: ProjectSecret
) -> None:
    with pytest.raises(InvalidInput, match="RLVR_JUDGE_ENDPOINTS") as caught:
        version_create_judge(reward_model=reward_model, actor=alice, params=judge_params())
    assert "none are configured" in caught.value.message
    assert list(caught.value.fields) == ["params.base_url"]


def test_a_judge_key_must_be_a_project_secret(
    reward_model: RewardModel, alice: User, judges_allowed: str
) -> None:
    with pytest.raises(InvalidInput, match="not a secret of this project") as caught:
        version_create_judge(reward_model=reward_model, actor=alice, params=judge_params())
    assert list(caught.value.fields) == ["params.api_key_secret"]


def test_a_judge_version_keeps_the_secret_name_only(
    reward_model: RewardModel, alice: User, judges_allowed: str, secret: ProjectSecret
) -> None:
    version = version_create_judge(
        reward_model=reward_model, actor=alice, params=judge_params(base_url=JUDGE_URL + "/")
    )
    entry = version.config_entry
    assert entry["name"] == "judge" and entry["params"]["api_key_secret"] == "OPENAI_KEY"
    assert version.origin == "endpoint" and version.folder == ""
    assert entry["params"]["concurrency"] == 8  # validated by the judge's own schema, defaults filled in


def test_a_judge_with_a_key_in_place_of_a_name_is_refused(
    reward_model: RewardModel, alice: User, judges_allowed: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        version_create_judge(
            reward_model=reward_model, actor=alice, params=judge_params(api_key_secret="sk-live-abcdef")
        )
    assert "sk-live-abcdef" not in caught.value.message
    assert "api_key_secret looks like an API key" in caught.value.message
