"""The training form and the reward job page: members read them, owners and admins get the form, outsiders get 404;
the form starts a job and lands on its page; names are escaped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.experiments.models import Run
from webapp.rewards.models import JobKind, RewardJob, RewardModel
from webapp.teams.models import Project

Join = Callable[[User, str | None], User]


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _job(project: Project, reward_model: RewardModel, alice: User, name: str = "job") -> RewardJob:
    return RewardJob.objects.create(
        project=project, kind=JobKind.TRAIN, reward_model=reward_model, name=name, created_by=alice,
        config={"source": {"run": 1}, "base_model": "tiny:chain", "hyper": {}},
    )  # fmt: skip


def test_the_reward_model_page_links_to_the_training_form(alice: User, reward_model: RewardModel) -> None:
    page = client_for(alice).get(f"/reward-models/{reward_model.pk}/").content.decode()
    assert f'href="/reward-models/{reward_model.pk}/train/"' in page and "Train a new version" in page


def test_the_form_lists_the_projects_runs_and_starts_a_job(
    alice: User, project: Project, reward_model: RewardModel, run: Run
) -> None:
    client = client_for(alice)
    page = client.get(f"/reward-models/{reward_model.pk}/train/").content.decode()
    assert (
        'id="rm-train-form"' in page and f'<option value="{run.pk}"' in page and 'value="tiny:chain"' in page
    )
    resp = client.post(
        f"/reward-models/{reward_model.pk}/train/",
        {"source_kind": "run", "run": str(run.pk), "per_prompt": "4", "base_model": "tiny:chain",
         "learning_rate": "0.0003", "epochs": "2", "batch_size": "8", "max_length": "256", "held_out_frac": "0.2",
         "seed": "1"},
    )  # fmt: skip
    job = RewardJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/reward-jobs/{job.pk}/"
    assert job.config["source"] == {"run": run.pk, "per_prompt": 4}
    assert job.config["hyper"]["learning_rate"] == 0.0003 and job.config["hyper"]["seed"] == 1


def test_a_bad_form_shows_the_error_and_starts_nothing(
    alice: User, reward_model: RewardModel, run: Run
) -> None:
    resp = client_for(alice).post(
        f"/reward-models/{reward_model.pk}/train/",
        {"source_kind": "run", "run": str(run.pk), "base_model": "tiny:chain", "learning_rate": "2",
         "epochs": "1", "batch_size": "8", "max_length": "256", "held_out_frac": "0.1", "seed": "0"},
    )  # fmt: skip
    assert resp.status_code == 200 and "learning_rate" in resp.content.decode()
    assert not RewardJob.objects.exists()


@pytest.mark.parametrize("role, form", [("admin", True), ("viewer", False), ("annotator", False)])
def test_members_read_the_pages_and_only_admins_get_the_form(
    alice: User, bob: User, join: Join, project: Project, reward_model: RewardModel, role: str, form: bool
) -> None:
    join(bob, role)
    job = _job(project, reward_model, alice)
    client = client_for(bob)
    page = client.get(f"/reward-models/{reward_model.pk}/train/").content.decode()
    assert ('id="rm-train-form"' in page) is form
    assert client.get(f"/reward-jobs/{job.pk}/").status_code == 200


def test_outsiders_get_404(alice: User, charlie: User, project: Project, reward_model: RewardModel) -> None:
    job = _job(project, reward_model, alice)
    client = client_for(charlie)
    assert client.get(f"/reward-models/{reward_model.pk}/train/").status_code == 404
    assert client.get(f"/reward-jobs/{job.pk}/").status_code == 404


def test_the_job_page_escapes_names_and_polls_the_api(
    alice: User, project: Project, reward_model: RewardModel
) -> None:
    job = _job(project, reward_model, alice, name="<script>alert(1)</script>")
    page = client_for(alice).get(f"/reward-jobs/{job.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"/api/reward-jobs/{job.pk}/" in page and "js/reward_training.js" in page and "plotly" in page
