"""Starting, reading and cancelling reward-model training jobs over the API; the pairs a job's source gives."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from trainer.errors import DataError
from trainer.rewards.pairs import PreferencePair
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Run
from webapp.rewards.models import JobKind, JobStatus, RewardJob, RewardModel
from webapp.rewards.training_selectors import pairs_for_source
from webapp.rewards.training_services import training_mark_started
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


def _url(project: Project, reward_model: RewardModel) -> str:
    return f"/api/projects/{project.pk}/reward-models/{reward_model.pk}/train/"


def _body(run: Run, **overrides: Any) -> dict[str, Any]:
    return {"source": {"run": run.pk}, "base_model": "tiny:chain", "hyper": {"epochs": 2}, **overrides}


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    ids: list[int] = []

    def send(job_id: int) -> str:
        ids.append(job_id)
        return f"task-{job_id}"

    monkeypatch.setattr("webapp.rewards.training_services.enqueue_reward_training", send)
    return ids


def test_an_owner_starts_a_training_job_with_validated_hyper_parameters(
    api: Api, alice: User, project: Project, reward_model: RewardModel, run: Run
) -> None:
    resp = api(alice).post(_url(project, reward_model), _body(run), format="json")
    assert resp.status_code == 202, resp.json()
    job = RewardJob.objects.get(pk=resp.json()["id"])
    assert (job.kind, job.status, job.reward_model_id) == (JobKind.TRAIN, JobStatus.QUEUED, reward_model.pk)
    assert job.config["source"] == {"run": run.pk} and job.config["base_model"] == "tiny:chain"
    assert (
        job.config["hyper"]["epochs"] == 2 and job.config["hyper"]["held_out_frac"] == 0.1
    )  # defaults filled in
    assert resp.json()["page_url"] == f"/reward-jobs/{job.pk}/" and resp.json()["can_cancel"]


def test_the_job_is_sent_to_a_worker_after_commit(
    api: Api, alice: User, project: Project, reward_model: RewardModel, run: Run, sent: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        resp = api(alice).post(_url(project, reward_model), _body(run), format="json")
    assert sent == [resp.json()["id"]]


@pytest.mark.parametrize("role, status", [("admin", 202), ("annotator", 403), ("viewer", 403), (None, 404)])
def test_only_owners_and_admins_may_train(
    api: Api, bob: User, join: Join, project: Project, reward_model: RewardModel, run: Run, role: str | None,
    status: int,
) -> None:  # fmt: skip
    join(bob, role)
    assert api(bob).post(_url(project, reward_model), _body(run), format="json").status_code == status


@pytest.mark.parametrize(
    "change, field",
    [
        ({"hyper": {"learning_rate": 5}}, "hyper.learning_rate"),
        ({"hyper": {"held_out_frac": 0.9}}, "hyper.held_out_frac"),
        ({"hyper": {"surprise": 1}}, "hyper.surprise"),
        ({"source": {}}, "source"),
        ({"source": {"run": 1, "dataset": 2}}, "source"),
        ({"source": {"run": 1, "per_prompt": 999}}, "source.per_prompt"),
        ({"base_model": "/etc"}, "base_model"),
    ],
)
def test_a_bad_request_names_its_field(
    api: Api,
    alice: User,
    project: Project,
    reward_model: RewardModel,
    run: Run,
    change: dict[str, Any],
    field: str,
) -> None:
    resp = api(alice).post(_url(project, reward_model), _body(run, **change), format="json")
    assert resp.status_code == 400, resp.json()
    assert field in resp.json()["extra"]["fields"], resp.json()
    assert not RewardJob.objects.exists()


def test_a_reward_model_of_another_project_is_not_found(
    api: Api, alice: User, project: Project, reward_model: RewardModel, run: Run
) -> None:
    from webapp.teams.services import project_create

    other = project_create(name="Other", owner=alice)
    assert api(alice).post(_url(other, reward_model), _body(run), format="json").status_code == 404


def test_members_read_a_job_and_outsiders_get_404(
    api: Api,
    alice: User,
    bob: User,
    charlie: User,
    join: Join,
    project: Project,
    reward_model: RewardModel,
    run: Run,
) -> None:
    job_id = api(alice).post(_url(project, reward_model), _body(run), format="json").json()["id"]
    join(bob, "viewer")
    assert api(bob).get(f"/api/reward-jobs/{job_id}/").json()["status"] == "queued"
    assert api(charlie).get(f"/api/reward-jobs/{job_id}/").status_code == 404
    assert api(charlie).post(f"/api/reward-jobs/{job_id}/cancel/").status_code == 404
    assert api(bob).post(f"/api/reward-jobs/{job_id}/cancel/").status_code == 403


def test_cancelling_a_queued_job_ends_it_and_the_worker_then_skips_it(
    api: Api, alice: User, project: Project, reward_model: RewardModel, run: Run
) -> None:
    job_id = api(alice).post(_url(project, reward_model), _body(run), format="json").json()["id"]
    body = api(alice).post(f"/api/reward-jobs/{job_id}/cancel/").json()
    assert (body["status"], body["cancel_requested"], body["can_cancel"]) == ("cancelled", True, False)
    assert training_mark_started(job_id=job_id) is None
    again = api(alice).post(f"/api/reward-jobs/{job_id}/cancel/")
    assert again.status_code == 409 and "already finished" in again.json()["message"]


def test_a_running_job_is_asked_to_stop(
    api: Api, alice: User, project: Project, reward_model: RewardModel, run: Run
) -> None:
    job_id = api(alice).post(_url(project, reward_model), _body(run), format="json").json()["id"]
    started = training_mark_started(job_id=job_id)
    assert started is not None and started.attempts == 1
    body = api(alice).post(f"/api/reward-jobs/{job_id}/cancel/").json()
    assert (body["status"], body["cancel_requested"]) == ("running", True)


def _record(run: Run, rows: list[tuple[str, str, bool | None, float]]) -> None:
    """One step of rollouts: (prompt id, completion, the run's verdict, the 'exact' verifier's reward)."""
    from tests.webapp.helpers import rollout_record
    from webapp.experiments.services import run_record_step

    records = [
        rollout_record(
            1, 0, i, prompt_id=pid, prompt=f"{pid}=", completion=text, correct=ok, rewards={"exact": r}
        )
        for i, (pid, text, ok, r) in enumerate(rows)
    ]
    run_record_step(run_id=run.pk, step=1, max_steps=run.max_steps, metrics={}, rollouts=records)


def test_a_runs_rollouts_give_pairs_of_a_correct_over_an_incorrect_completion(
    project: Project, run: Run
) -> None:
    _record(run, [("a", "right", True, 0.0), ("a", "wrong", False, 1.0), ("b", "only wrong", False, 0.0),
                  ("c", "no verdict", None, 0.0)])  # fmt: skip
    assert pairs_for_source(project=project, source={"run": run.pk}) == [
        PreferencePair("a=", "right", "wrong")
    ]


def test_a_runs_rollouts_may_be_judged_by_one_verifier_key(project: Project, run: Run) -> None:
    _record(run, [("a", "right", True, 0.0), ("a", "wrong", False, 1.0)])
    pairs = pairs_for_source(project=project, source={"run": run.pk, "verifier": "exact"})
    assert pairs == [PreferencePair("a=", "wrong", "right")]


def test_a_run_without_pairs_is_an_error_that_says_so(project: Project, run: Run) -> None:
    _record(run, [("a", "x", False, 0.0), ("a", "y", False, 0.0)])
    with pytest.raises(DataError, match="no preference pairs"):
        pairs_for_source(project=project, source={"run": run.pk})


def test_an_uploaded_pairs_file_is_read_and_a_bad_line_is_named(
    project: Project, alice: User, tmp_path: Path
) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        json.dumps({"prompt": "q", "chosen": "a", "rejected": "b"})
        + "\n"
        + json.dumps({"prompt": "q"})
        + "\n"
    )
    dataset = Dataset.objects.create(
        project=project,
        name="pairs",
        path=str(path),
        format="jsonl",
        rows=2,
        fields=["prompt"],
        prompt_field="prompt",
    )
    with pytest.raises(DataError, match="line 2 has no 'chosen' field"):
        pairs_for_source(project=project, source={"dataset": dataset.pk})
    path.write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "b"}) + "\n")
    assert pairs_for_source(project=project, source={"dataset": dataset.pk}) == [
        PreferencePair("q", "a", "b")
    ]
