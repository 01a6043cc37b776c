"""Starting a process reward model training job over the API: step labels from the chain oracle, Monte-Carlo
continuations or an uploaded step-labelled file, every setting bounded, every model confined, the data file the
project's own; a PRM job goes to a reward model of PRMs only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.rewards.helpers import write_checkpoint
from webapp.datafiles.models import Dataset
from webapp.rewards.models import JobKind, JobStatus, RewardJob, RewardModel
from webapp.rewards.services import reward_model_create, version_create_prm, version_create_scalar
from webapp.rewards.training_services import training_mark_started
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]


def _url(project: Project, reward_model: RewardModel) -> str:
    return f"/api/projects/{project.pk}/reward-models/{reward_model.pk}/train/"


def _body(**overrides: Any) -> dict[str, Any]:
    labels = {"source": "oracle", "policy": "tiny:chain-teacher", "problems": 8, "samples_per_problem": 2}
    return {"labels": labels, "base_model": "tiny:chain", "hyper": {"epochs": 1}, **overrides}


def _dataset(project: Project, tmp_path: Path) -> Dataset:
    path = tmp_path / "steps.jsonl"
    path.write_text('{"input": "1+1=\\n2 ки", "label": "1+1=\\n2 +"}\n', encoding="utf-8")
    return Dataset.objects.create(
        project=project, name=f"steps {project.pk}", path=str(path), format="jsonl", rows=1
    )


def test_an_owner_starts_an_oracle_labelled_prm_job_with_every_default_filled_in(
    api: Api, alice: User, project: Project, reward_model: RewardModel
) -> None:
    resp = api(alice).post(_url(project, reward_model), _body(), format="json")
    assert resp.status_code == 202, resp.json()
    job = RewardJob.objects.get(pk=resp.json()["id"])
    assert (job.kind, job.status, job.reward_model_id) == (JobKind.TRAIN, JobStatus.QUEUED, reward_model.pk)
    assert job.config["labels"] == {
        "source": "oracle", "policy": "tiny:chain-teacher", "problems": 8, "samples_per_problem": 2,
        "level": "easy", "max_new_tokens": 96, "temperature": 0.7, "seed": 0,
    }  # fmt: skip
    assert job.config["hyper"]["epochs"] == 1 and job.config["hyper"]["label_threshold"] == 0.5
    assert job.config["base_model"] == "tiny:chain" and "source" not in job.config


def test_the_job_is_sent_to_a_worker_after_commit_and_starts_by_labelling(
    api: Api, alice: User, project: Project, reward_model: RewardModel, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    sent: list[int] = []
    monkeypatch.setattr("webapp.rewards.training_services.enqueue_reward_training", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api(alice).post(_url(project, reward_model), _body(), format="json")
    assert sent == [resp.json()["id"]]
    started = training_mark_started(job_id=sent[0])
    assert started is not None and started.progress["phase"] == "labelling steps"


def test_monte_carlo_and_file_labels_are_accepted(
    api: Api, alice: User, project: Project, reward_model: RewardModel, tmp_path: Path
) -> None:
    mc = {"source": "monte_carlo", "policy": "tiny:chain-teacher", "problems": 4, "k": 2}
    resp = api(alice).post(_url(project, reward_model), _body(labels=mc), format="json")
    assert resp.status_code == 202, resp.json()
    assert resp.json()["config"]["labels"]["k"] == 2
    dataset = _dataset(project, tmp_path)
    file = {"source": "file", "dataset": dataset.pk, "format": "math_shepherd"}
    resp = api(alice).post(_url(project, reward_model), _body(labels=file), format="json")
    assert resp.status_code == 202, resp.json()
    assert resp.json()["config"]["labels"] == {**file, "neutral": 1.0, "max_examples": 100_000}
    assert dataset.path not in str(resp.json())  # the stored job names the file by id


@pytest.mark.parametrize(
    ("labels", "hyper", "field"),
    [
        ({"source": "magic"}, {}, "labels.source"),
        ({"policy": "tiny:chain"}, {}, "labels.source"),
        ({"source": "oracle"}, {}, "labels.policy"),
        ({"source": "oracle", "policy": "/etc"}, {}, "labels.policy"),
        ({"source": "oracle", "policy": "../x"}, {}, "labels.policy"),
        ({"source": "oracle", "policy": "tiny:chain", "problems": 1}, {}, "labels.problems"),
        ({"source": "oracle", "policy": "tiny:chain", "problems": 10**9}, {}, "labels.problems"),
        (
            {"source": "oracle", "policy": "tiny:chain", "problems": 20_000, "samples_per_problem": 8},
            {},
            "labels",
        ),
        (
            {"source": "oracle", "policy": "tiny:chain", "samples_per_problem": 0},
            {},
            "labels.samples_per_problem",
        ),
        ({"source": "oracle", "policy": "tiny:chain", "temperature": 0}, {}, "labels.temperature"),
        ({"source": "oracle", "policy": "tiny:chain", "surprise": 1}, {}, "labels.surprise"),
        ({"source": "monte_carlo", "policy": "tiny:chain", "k": 999}, {}, "labels.k"),
        ({"source": "file", "dataset": 1, "format": "csv"}, {}, "labels.format"),
        ({"source": "file", "format": "prm800k"}, {}, "labels.dataset"),
        ({"source": "oracle", "policy": "tiny:chain"}, {"learning_rate": 5}, "hyper.learning_rate"),
        ({"source": "oracle", "policy": "tiny:chain"}, {"held_out_frac": 0.9}, "hyper.held_out_frac"),
        ({"source": "oracle", "policy": "tiny:chain"}, {"surprise": 1}, "hyper.surprise"),
    ],
)
def test_a_bad_request_names_its_field(
    api: Api, alice: User, project: Project, reward_model: RewardModel, labels: dict[str, Any],
    hyper: dict[str, Any], field: str,
) -> None:  # fmt: skip
    resp = api(alice).post(_url(project, reward_model), _body(labels=labels, hyper=hyper), format="json")
    assert resp.status_code == 400, resp.json()
    assert set(resp.json()) == {"message", "extra"} and field in resp.json()["extra"]["fields"], resp.json()
    assert not RewardJob.objects.exists()


def test_a_base_model_outside_the_roots_is_refused(
    api: Api, alice: User, project: Project, reward_model: RewardModel, model_root: Path
) -> None:
    resp = api(alice).post(_url(project, reward_model), _body(base_model="/etc"), format="json")
    assert resp.status_code == 400 and "base_model" in resp.json()["extra"]["fields"]


def test_a_data_file_of_another_project_is_refused(
    api: Api, alice: User, project: Project, reward_model: RewardModel, tmp_path: Path
) -> None:
    theirs = _dataset(project_create(name="Other", owner=alice), tmp_path)
    labels = {"source": "file", "dataset": theirs.pk, "format": "math_shepherd"}
    resp = api(alice).post(_url(project, reward_model), _body(labels=labels), format="json")
    assert resp.status_code == 400 and "labels.dataset" in resp.json()["extra"]["fields"], resp.json()
    assert "not an uploaded data file of this project" in resp.json()["message"]


def test_pairs_and_step_labels_are_never_named_together(
    api: Api, alice: User, project: Project, reward_model: RewardModel
) -> None:
    resp = api(alice).post(_url(project, reward_model), _body(source={"run": 1}), format="json")
    assert resp.status_code == 400 and {"source", "labels"} <= set(resp.json()["extra"]["fields"])
    body = _body()
    del body["labels"]
    assert api(alice).post(_url(project, reward_model), body, format="json").status_code == 400


def test_a_prm_job_on_a_reward_model_of_scalar_versions_is_refused_and_a_pairs_job_on_a_prm(
    api: Api, alice: User, project: Project, reward_model: RewardModel, rm_folder: Path, model_root: Path
) -> None:
    version_create_scalar(reward_model=reward_model, actor=alice, model=str(rm_folder))
    resp = api(alice).post(_url(project, reward_model), _body(), format="json")
    assert resp.status_code == 400 and "holds scalar or judge versions" in resp.json()["message"]
    prms = reward_model_create(project=project, actor=alice, name="PRMs")
    write_checkpoint(model_root / "prm", architecture="Qwen2ForTokenClassification", labels=2)
    version_create_prm(reward_model=prms, actor=alice, model="prm")
    pairs = {"source": {"run": 1}, "base_model": "tiny:chain"}
    resp = api(alice).post(_url(project, prms), pairs, format="json")
    assert resp.status_code == 400 and "holds process reward model versions" in resp.json()["message"]
    assert not RewardJob.objects.exists()


@pytest.mark.parametrize(
    ("role", "status"), [("admin", 202), ("annotator", 403), ("viewer", 403), (None, 404)]
)
def test_only_owners_and_admins_may_train_a_prm(
    api: Api, bob: User, join: Callable[[User, str | None], User], project: Project, reward_model: RewardModel,
    role: str | None, status: int,
) -> None:  # fmt: skip
    join(bob, role)
    assert api(bob).post(_url(project, reward_model), _body(), format="json").status_code == status
