"""The training form and job page for process reward models: a reward model of PRMs offers only step labels, one of
scalar versions only pairs, an empty one both; the form starts a PRM job and its page names what it trains on."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.rewards.helpers import write_checkpoint
from webapp.rewards.models import RewardJob, RewardModel
from webapp.rewards.services import reward_model_create, version_create_prm, version_create_scalar
from webapp.rewards.training_prm import prm_training_start
from webapp.teams.models import Project

PRM_POST = {
    "model_kind": "prm", "labels_source": "monte_carlo", "policy": "tiny:chain-teacher", "problems": "12",
    "samples_per_problem": "2", "k": "3", "level": "medium", "base_model": "tiny:chain", "prm_learning_rate": "0.001",
    "prm_epochs": "1", "prm_batch_size": "8", "prm_max_length": "128", "prm_held_out_frac": "0.25", "prm_seed": "3",
    "prm_eval_every": "5", "prm_label_threshold": "0.25", "prm_soft_labels": "1",
}  # fmt: skip


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_empty_reward_model_offers_both_kinds_and_the_form_starts_a_prm_job(
    alice: User, reward_model: RewardModel
) -> None:
    client = client_for(alice)
    page = client.get(f"/reward-models/{reward_model.pk}/train/").content.decode()
    assert 'id="rm-train-kind"' in page and 'id="rm-train-pairs"' in page and 'id="rm-train-prm"' in page
    resp = client.post(f"/reward-models/{reward_model.pk}/train/", PRM_POST)
    job = RewardJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/reward-jobs/{job.pk}/"
    labels = job.config["labels"]
    assert (labels["source"], labels["problems"], labels["k"], labels["level"]) == (
        "monte_carlo",
        12,
        3,
        "medium",
    )
    hyper = job.config["hyper"]
    assert (hyper["learning_rate"], hyper["batch_size"], hyper["micro_batch_size"]) == (0.001, 8, 8)
    assert hyper["soft_labels"] is True and hyper["label_threshold"] == 0.25 and hyper["eval_every"] == 5


def test_a_reward_model_of_prms_offers_only_step_labels_and_one_of_scalars_only_pairs(
    alice: User, project: Project, reward_model: RewardModel, rm_folder: Path, model_root: Path
) -> None:
    version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    prms = reward_model_create(project=project, actor=alice, name="PRMs")
    write_checkpoint(model_root / "prm", architecture="Qwen2ForTokenClassification", labels=2)
    version_create_prm(reward_model=prms, actor=alice, model="prm")
    client = client_for(alice)
    scalar_page = client.get(f"/reward-models/{reward_model.pk}/train/").content.decode()
    assert 'id="rm-train-pairs"' in scalar_page and 'id="rm-train-prm"' not in scalar_page
    prm_page = client.get(f"/reward-models/{prms.pk}/train/").content.decode()
    assert 'id="rm-train-prm"' in prm_page and 'id="rm-train-pairs"' not in prm_page
    assert 'id="rm-train-kind"' not in prm_page
    resp = client.post(
        f"/reward-models/{prms.pk}/train/", {**PRM_POST, "model_kind": "pairs"}
    )  # its kind rules
    assert resp.status_code == 302 and RewardJob.objects.get().config["labels"]["source"] == "monte_carlo"


def test_a_bad_prm_form_shows_the_error_and_starts_nothing(alice: User, reward_model: RewardModel) -> None:
    resp = client_for(alice).post(
        f"/reward-models/{reward_model.pk}/train/", {**PRM_POST, "problems": "many"}
    )
    assert resp.status_code == 200 and "problems must be a whole number" in resp.content.decode()
    resp = client_for(alice).post(
        f"/reward-models/{reward_model.pk}/train/", {**PRM_POST, "labels_source": "file", "label_dataset": ""}
    )
    assert resp.status_code == 200 and "Choose a dataset" in resp.content.decode()
    assert not RewardJob.objects.exists()


def test_the_prm_job_page_names_its_labels_and_draws_step_accuracy(
    alice: User, reward_model: RewardModel
) -> None:
    labels = {"source": "oracle", "policy": "tiny:chain-teacher", "problems": 4}
    job = prm_training_start(reward_model=reward_model, actor=alice, labels=labels, base_model="tiny:chain")
    page = client_for(alice).get(f"/reward-jobs/{job.pk}/").content.decode()
    assert "the chain oracle's step labels of tiny:chain-teacher's samples, on tiny:chain" in page
    assert "Held-out step and first-error accuracy" in page and '"prm": true' in page
    listed = client_for(alice).get(f"/reward-models/{reward_model.pk}/train/").content.decode()
    assert f'href="/reward-jobs/{job.pk}/"' in listed
