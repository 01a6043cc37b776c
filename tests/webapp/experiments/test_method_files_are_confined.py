"""A method parameter that names a file (the beta_learnability prior_file) is an uploaded data file of the
project, never a server path: refused on save, resolved to the upload's path only in the worker's copy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.datafiles.models import Dataset
from webapp.experiments.config_paths import confine_experiment_config
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]
FIELD = "config.budget.prompt_sampler.params.prior_file"


def sampler(prior_file: str) -> dict[str, Any]:
    return {"prompt_sampler": {"name": "beta_learnability", "params": {"prior_file": prior_file}}}


def create(api: Api, user: User, project: Project, prior_file: str) -> Any:
    config = {**SMALL_CONFIG, "budget": sampler(prior_file)}
    return api(user).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "exp", "config": config}, format="json"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/etc/passwd", "../../secret.json", "dataset:999999"])
def test_a_prior_file_that_is_not_an_upload_of_the_project_is_refused(
    api: Api, alice: User, project: Project, path: str
) -> None:
    response = create(api, alice, project, path)
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["message"] == body["extra"]["fields"][FIELD][0]
    assert "is not an uploaded data file of this project" in body["message"]


@pytest.mark.django_db
def test_an_upload_of_another_project_is_refused_and_one_of_this_project_resolves_for_the_worker(
    api: Api, alice: User, project: Project, tmp_path: Path
) -> None:
    other = project_create(name="other", owner=alice)
    prior = tmp_path / "prior.json"
    prior.write_text('{"p0": 0.5}')
    theirs = Dataset.objects.create(
        project=other, name="p", path=str(prior), format="json", rows=1, prompt_field="prompt"
    )
    assert create(api, alice, project, f"dataset:{theirs.pk}").status_code == 400
    ours = Dataset.objects.create(
        project=project, name="p", path=str(prior), format="json", rows=1, prompt_field="prompt"
    )
    response = create(api, alice, project, f"dataset:{ours.pk}")
    assert response.status_code == 201, response.json()
    stored = response.json()["config"]
    assert (
        stored["budget"]["prompt_sampler"]["params"]["prior_file"] == f"dataset:{ours.pk}"
    )  # the id, not the path
    resolved = confine_experiment_config(stored, project=project, resolve=True)
    assert resolved["budget"]["prompt_sampler"]["params"]["prior_file"] == str(prior)
