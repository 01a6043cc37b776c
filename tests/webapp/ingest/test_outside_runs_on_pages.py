"""An outside run is an ordinary run on every page, says where it came from, and offers none of the
actions that drive this platform's own workers."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.ingest.helpers import batch, post, rollout, token_client
from webapp.core.errors import Conflict
from webapp.experiments.config_paths import confine_model
from webapp.experiments.models import Checkpoint, Run
from webapp.experiments.services import run_cancel, run_resume
from webapp.teams.models import Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def outside_run(alice: User, project: Project) -> Run:
    body = batch(
        project.slug,
        rollouts=[rollout(1, 0, 0), rollout(1, 0, 1, correct=True)],
        metrics=[{"step": 1, "values": {"rollout/reward_mean": 0.5}}],
        checkpoints=[{"step": 1, "uri": "/etc"}],
        finish={"status": "failed", "error_message": "OOM"},
    )
    body["run"]["source_info"]["command"] = "python train_grpo.py --lr 1e-6"
    assert post(token_client(alice), body).status_code == 201
    return Run.objects.get()


def test_the_run_page_says_where_the_run_came_from_and_offers_no_resume(
    alice: User, outside_run: Run
) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get(f"/runs/{outside_run.pk}/").content.decode()

    assert 'id="run-source"' in html and "TRL 1.16.0" in html and "gpu-3" in html
    assert "python train_grpo.py --lr 1e-6" in html
    assert "Resume</button>" not in html and "Cancel run" not in html


def test_the_pages_of_an_outside_run_and_its_experiment_open(alice: User, outside_run: Run) -> None:
    client = Client()
    client.force_login(alice)
    project = outside_run.experiment.project
    for url in (
        f"/runs/{outside_run.pk}/rollouts/",
        f"/runs/{outside_run.pk}/rollouts/rows/",
        f"/experiments/{outside_run.experiment_id}/",
        f"/projects/{project.pk}/compare/?runs={outside_run.pk}",
        f"/projects/{project.pk}/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
    compare = client.get(f"/projects/{project.pk}/compare/?runs={outside_run.pk}").content.decode()
    assert "(TRL)" in compare


def test_the_rollout_list_keeps_an_unknown_verdict_unknown(alice: User, outside_run: Run) -> None:
    client = Client()
    client.force_login(alice)
    rows = client.get(f"/api/runs/{outside_run.pk}/rollouts/").json()["results"]
    assert sorted((r["sample_index"], r["correct"]) for r in rows) == [(0, None), (1, True)]


def test_resume_and_cancel_say_the_outside_trainer_drives_the_run(alice: User, outside_run: Run) -> None:
    with pytest.raises(Conflict, match="trained outside RLVR Studio"):
        run_resume(run=outside_run, actor=alice)
    with pytest.raises(Conflict, match="trained outside RLVR Studio"):
        run_cancel(run=outside_run, actor=alice)


def test_an_outside_checkpoint_is_loaded_only_from_the_model_folders(
    outside_run: Run, project: Project
) -> None:
    from webapp.core.errors import InvalidInput

    checkpoint = Checkpoint.objects.get(run=outside_run)
    with pytest.raises(InvalidInput, match="outside the allowed model folders"):
        confine_model(f"checkpoint:{checkpoint.pk}", project=project, resolve=True)


def test_the_run_page_shows_how_many_rollouts_could_not_be_delivered(alice: User, outside_run: Run) -> None:
    Run.objects.filter(pk=outside_run.pk).update(rollouts_dropped=3)
    client = Client()
    client.force_login(alice)
    html = client.get(f"/runs/{outside_run.pk}/").content.decode()

    assert 'id="run-dropped-badge">3 rollouts missing' in html
    assert '<span id="run-dropped-count">3</span> rollout(s) of this run could not be delivered' in html


def test_the_run_page_of_a_complete_run_hides_the_missing_rollouts_notice(
    alice: User, outside_run: Run
) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get(f"/runs/{outside_run.pk}/").content.decode()

    assert 'id="run-dropped-badge" hidden' in html and 'id="run-dropped" hidden' in html


def test_the_run_page_redacts_a_secret_in_a_command_stored_unredacted(alice: User, outside_run: Run) -> None:
    info = {**outside_run.source_info, "command": "python train.py --hub_token hf_live_secret --lr 1e-6"}
    Run.objects.filter(pk=outside_run.pk).update(source_info=info)  # stored before the server redacted
    client = Client()
    client.force_login(alice)
    html = client.get(f"/runs/{outside_run.pk}/").content.decode()

    assert "hf_live_secret" not in html and "python train.py --hub_token *** --lr 1e-6" in html
