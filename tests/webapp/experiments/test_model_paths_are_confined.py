"""Model fields of a config from the API load only tiny: models, checkpoints of the same project, or
folders under RLVR_MODEL_ROOTS; '..' and symlinks do not lead out, and refusals say what is allowed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.config_paths import run_config_for_worker
from webapp.experiments.models import Checkpoint, Experiment, Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]
FIELD = "config.model.name_or_path"


@pytest.fixture
def roots(settings: Settings, tmp_path: Path) -> Path:
    """One model root holding ``org/model`` (a hub-style name), and a secret folder beside it."""
    root = tmp_path / "models"
    (root / "org" / "model").mkdir(parents=True)
    (root / "org" / "model" / "config.json").write_text("{}")
    secret = tmp_path / "secret"
    secret.mkdir()
    key = secret / "id_key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n")
    key.chmod(0o600)
    settings.RLVR_MODEL_ROOTS = [root]
    return root


def create(api: Api, user: User, project: Project, **sections: Any) -> Any:
    config = {**SMALL_CONFIG, **sections}
    return api(user).post(
        f"/api/projects/{project.pk}/experiments/", {"name": "exp", "config": config}, format="json"
    )


def refusal(response: Any, field: str = FIELD) -> str:
    assert response.status_code == 400, response.json()
    body = response.json()
    assert field in body["extra"]["fields"], body
    message: str = body["extra"]["fields"][field][0]
    assert body["message"] == message  # the one error shape: the message, and the field it is about
    return message


@pytest.mark.parametrize("path", ["/etc/passwd", "/etc", "/"])
def test_a_server_path_outside_the_model_roots_is_refused_with_what_is_allowed(
    api: Api, alice: User, project: Project, roots: Path, path: str
) -> None:
    message = refusal(create(api, alice, project, model={"name_or_path": path}))
    assert message.startswith(f"model.name_or_path {path!r} is outside the allowed model folders")
    assert "tiny:" in message and "checkpoint:<id>" in message and f"RLVR_MODEL_ROOTS ({roots})" in message


def test_a_0600_key_file_is_refused_and_nothing_of_it_is_shown(
    api: Api, alice: User, project: Project, roots: Path
) -> None:
    key = roots.parent / "secret" / "id_key"
    message = refusal(create(api, alice, project, model={"name_or_path": str(key)}))
    assert "outside the allowed model folders" in message and "BEGIN OPENSSH" not in message


@pytest.mark.parametrize("name", ["../secret", "org/../../secret", "org/model/../../../secret"])
def test_dot_dot_cannot_lead_out_of_a_root(
    api: Api, alice: User, project: Project, roots: Path, name: str
) -> None:
    assert "outside the allowed model folders" in refusal(
        create(api, alice, project, model={"name_or_path": name})
    )


def test_an_absolute_path_through_a_root_and_dot_dot_is_refused(
    api: Api, alice: User, project: Project, roots: Path
) -> None:
    sneaky = f"{roots}/org/../../secret"
    assert "outside the allowed model folders" in refusal(
        create(api, alice, project, model={"name_or_path": sneaky})
    )


def test_a_symlink_inside_a_root_cannot_lead_out_of_it(
    api: Api, alice: User, project: Project, roots: Path
) -> None:
    (roots / "link").symlink_to(roots.parent / "secret", target_is_directory=True)
    for name in ("link", str(roots / "link")):
        assert "outside the allowed model folders" in refusal(
            create(api, alice, project, model={"name_or_path": name})
        )


def test_the_run_and_upload_folders_are_not_model_folders_even_inside_a_root(
    api: Api, alice: User, project: Project, settings: Settings, tmp_path: Path
) -> None:
    settings.RLVR_MODEL_ROOTS = [tmp_path]  # an operator's root that happens to hold the runs folder
    other_run = Path(settings.RLVR_RUNS_DIR) / "run-99" / "step-000010"
    other_run.mkdir(parents=True)
    message = refusal(create(api, alice, project, model={"name_or_path": str(other_run)}))
    assert "inside the run or upload folders" in message


def test_a_hub_style_name_is_a_folder_under_a_root_and_the_worker_gets_its_real_path(
    alice: User, project: Project, roots: Path
) -> None:
    experiment = experiment_create(
        project=project,
        actor=alice,
        name="exp",
        config={**SMALL_CONFIG, "model": {"name_or_path": "org/model"}},
    )
    run = run_launch(experiment=experiment, actor=alice)
    assert run.config["model"]["name_or_path"] == "org/model"  # what the user sees keeps the name
    assert run_config_for_worker(run=run)["model"]["name_or_path"] == str((roots / "org" / "model").resolve())


def test_a_folder_not_there_yet_may_be_saved_but_not_launched(
    alice: User, project: Project, roots: Path
) -> None:
    from webapp.core.errors import InvalidInput

    experiment = experiment_create(
        project=project,
        actor=alice,
        name="exp",
        config={**SMALL_CONFIG, "model": {"name_or_path": "org/later"}},
    )
    with pytest.raises(InvalidInput) as err:
        run_launch(experiment=experiment, actor=alice)
    assert "is not a folder under the allowed model folders" in err.value.message
    assert FIELD in err.value.fields


def test_teacher_and_judge_models_are_confined_too(
    api: Api, alice: User, project: Project, roots: Path
) -> None:
    teacher = create(api, alice, project, teacher={"name_or_path": "/etc", "fusion": "puu"})
    assert "outside the allowed model folders" in refusal(teacher, "config.teacher.name_or_path")
    rubric = {"criteria": [{"name": "c", "scorer": "judge"}], "judge_model": {"name_or_path": "/etc"}}
    judge = create(api, alice, project, rubric=rubric)
    assert "outside the allowed model folders" in refusal(judge, "config.rubric.judge_model.name_or_path")


def checkpoint_in(project: Project, user: User, path: Path) -> Checkpoint:
    experiment = experiment_create(
        project=project, actor=user, name=f"trained-{project.pk}", config=SMALL_CONFIG
    )
    run = run_launch(experiment=experiment, actor=user)
    path.mkdir(parents=True)
    return Checkpoint.objects.create(run=run, step=10, path=str(path))


def test_a_checkpoint_of_a_run_in_another_project_is_refused(
    api: Api, alice: User, bob: User, project: Project, tmp_path: Path
) -> None:
    theirs = checkpoint_in(project_create(name="Bob's", owner=bob), bob, tmp_path / "bob-ckpt")
    message = refusal(create(api, alice, project, model={"name_or_path": f"checkpoint:{theirs.pk}"}))
    assert message.startswith(
        f"model.name_or_path 'checkpoint:{theirs.pk}' is not a checkpoint of a run in this project"
    )


def test_a_checkpoint_of_a_run_in_the_same_project_trains_as_the_model(
    alice: User, project: Project, tmp_path: Path
) -> None:
    mine = checkpoint_in(project, alice, tmp_path / "ckpt")
    experiment = experiment_create(
        project=project,
        actor=alice,
        name="continue",
        config={**SMALL_CONFIG, "model": {"name_or_path": f"checkpoint:{mine.pk}"}},
    )
    run = run_launch(experiment=experiment, actor=alice)
    assert run_config_for_worker(run=run)["model"]["name_or_path"] == mine.path


def test_the_worker_refuses_a_config_changed_behind_the_checks(alice: User, experiment: Experiment) -> None:
    from trainer.errors import ConfigError

    run = run_launch(experiment=experiment, actor=alice)
    Run.objects.filter(pk=run.pk).update(
        config={**run.config, "model": {**run.config["model"], "name_or_path": "/etc"}}
    )
    run.refresh_from_db()
    with pytest.raises(ConfigError, match="outside the allowed model folders"):
        run_config_for_worker(run=run)


def test_the_worker_writes_into_the_runs_own_folder_whatever_the_config_says(
    alice: User, experiment: Experiment, settings: Settings
) -> None:
    run = run_launch(experiment=experiment, actor=alice)
    Run.objects.filter(pk=run.pk).update(
        config={**run.config, "checkpoint": {**run.config["checkpoint"], "output_dir": "/etc/cron.d"}}
    )
    run.refresh_from_db()
    assert run_config_for_worker(run=run)["checkpoint"]["output_dir"] == str(
        Path(settings.RLVR_RUNS_DIR) / f"run-{run.pk}"
    )


def test_tiny_models_need_no_root(
    api: Api, alice: User, project: Project, settings: Settings, tmp_path: Path
) -> None:
    settings.RLVR_MODEL_ROOTS = [tmp_path / "empty"]
    response = create(api, alice, project, model={"name_or_path": "tiny:addition"})
    assert response.status_code == 201, response.json()


def test_a_tiny_name_is_never_a_path(api: Api, alice: User, project: Project, roots: Path) -> None:
    message = refusal(create(api, alice, project, model={"name_or_path": "tiny:../../secret"}))
    assert "is not a built-in tiny: model name" in message
