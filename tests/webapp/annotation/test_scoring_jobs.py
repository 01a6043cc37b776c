"""Scoring a task's items with a saved verifier or a rubric's rule criteria: the web request only queues
a job (sent by name to the default queue), the worker's service scores every item and stores the scores,
judge criteria are skipped and said so, and a bad start is refused with the field to fix."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from webapp.annotation.machine_scorers import machine_agreement, machine_table
from webapp.annotation.models import AnnotationTask, ItemScore, ScoringJob, ScoringStatus
from webapp.annotation.scoring_jobs import scoring_job_execute, scoring_job_start
from webapp.core.errors import InvalidInput
from webapp.rubrics.models import Criterion, Rubric
from webapp.teams.services import project_create
from webapp.verification.models import VerifierVersion
from webapp.verification.services import verifier_definition_create

Api = Callable[[User | None], APIClient]


@pytest.fixture
def version(scored_task: AnnotationTask, alice: User) -> VerifierVersion:
    definition = verifier_definition_create(
        project=scored_task.project,
        actor=alice,
        name="last number",
        verifier="exact",
        params={"extract": "last_number"},
    )
    return definition.versions.get()


@pytest.fixture
def says_answer(scored_task: AnnotationTask, alice: User) -> Rubric:
    """A second rubric of the project: one regex rule and one judge criterion."""
    rubric = Rubric.objects.create(project=scored_task.project, name="style", created_by=alice)
    Criterion.objects.create(rubric=rubric, position=0, name="says_answer", scale="binary", scorer="rule",
                             rule={"type": "regex", "params": {"pattern": "answer is"}})  # fmt: skip
    Criterion.objects.create(rubric=rubric, position=1, name="polite", scale="likert5", min_value=1, max_value=5, scorer="judge",
                             judge={"prompt_template": "Rate {completion}", "parse_pattern": r"(\d)"})  # fmt: skip
    return rubric


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[int]:
    """Job ids sent to the worker (by name), instead of a broker."""
    ids: list[int] = []

    def send(task: object, job_id: int) -> str:
        ids.append(job_id)
        return "task-id"

    settings.RLVR_ENQUEUE = True
    monkeypatch.setattr("webapp.annotation.dispatch.send", send)
    return ids


def test_starting_a_job_only_queues_it_and_sends_it_by_name_after_commit(
    scored_task: AnnotationTask,
    version: VerifierVersion,
    alice: User,
    sent: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        job = scoring_job_start(task=scored_task, actor=alice, verifier_version=version)
    assert (job.status, job.total, job.label) == (ScoringStatus.QUEUED, 6, "Verifier last number v1")
    assert job.scorer == {"verifier": "exact", "params": version.params, "version": version.pk}
    assert sent == [job.pk] and not ItemScore.objects.exists()  # nothing is scored in the web process
    again = scoring_job_start(task=scored_task, actor=alice, verifier_version=version)
    assert again.pk == job.pk  # a second click while it is queued gets the same job


def test_the_worker_scores_every_item_with_the_verifier(
    scored_task: AnnotationTask, version: VerifierVersion, alice: User
) -> None:
    job = scoring_job_start(task=scored_task, actor=alice, verifier_version=version)
    assert scoring_job_execute(job_id=job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.attempts) == (ScoringStatus.SUCCEEDED, 6, 6, 1)
    scores = {s.item_id: s for s in ItemScore.objects.filter(job=job)}
    assert len(scores) == 6
    for item in scored_task.items.all():
        expected = (
            1.0 if re.findall(r"\d+", item.completion)[-1] == "4" else 0.0
        )  # every reference answer is "4"
        assert scores[item.pk].score == expected and scores[item.pk].key == "reward"
        assert scores[item.pk].detail["correct"] is (expected == 1.0)
    assert scoring_job_execute(job_id=job.pk) == "skipped"  # a finished job delivered again


def test_the_worker_scores_a_rubrics_rule_criteria_and_skips_its_judge(
    scored_task: AnnotationTask, says_answer: Rubric, alice: User
) -> None:
    job = scoring_job_start(task=scored_task, actor=alice, rubric=says_answer)
    assert [c["name"] for c in job.scorer["criteria"]] == ["says_answer"]
    assert job.scorer["skipped_judge_criteria"] == ["polite"]
    assert scoring_job_execute(job_id=job.pk) == "succeeded"
    for item in scored_task.items.all():
        row = ItemScore.objects.get(job=job, item=item, key="says_answer")
        assert row.score == (1.0 if "answer is" in item.completion else 0.0)
    scorers, _ = machine_table(task=scored_task)
    (scorer,) = [s for s in scorers if s.key == f"job:{job.pk}:says_answer"]
    assert (scorer.low, scorer.high, scorer.items) == (0.0, 1.0, 6)
    result = machine_agreement(task=scored_task, scorer=scorer.key, criterion="has_answer")
    assert result["items"] == 6 and result["normalised"] is True


def test_a_job_that_ends_while_the_task_page_is_built_is_offered_or_polled(
    scored_task: AnnotationTask,
    version: VerifierVersion,
    alice: User,
    browser_as: Callable[[str | None], Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker finishes the job just after the page has read the scores on offer: the page must then show the
    job as still running (so it polls and reloads), not as finished without its scores."""
    import json

    from webapp.annotation import views

    job = scoring_job_start(task=scored_task, actor=alice, verifier_version=version)
    read_scores = views.machine_table

    def scores_then_the_worker_ends(*, task: AnnotationTask) -> Any:
        table = read_scores(task=task)
        scoring_job_execute(job_id=job.pk)
        return table

    monkeypatch.setattr(views, "machine_table", scores_then_the_worker_ends)
    html = browser_as("owner").get(f"/annotation/{scored_task.pk}/").content.decode()
    data_script = re.search(r'<script id="task-data" type="application/json">(.*?)</script>', html)
    page_data = json.loads(data_script[1])
    offered = f'value="job:{job.pk}:reward"' in html
    assert offered or page_data["active_jobs"] == [job.pk], (offered, page_data)
    assert ScoringJob.objects.get(pk=job.pk).status == ScoringStatus.SUCCEEDED


def test_a_job_left_running_by_a_dead_worker_starts_over(
    scored_task: AnnotationTask, version: VerifierVersion, alice: User
) -> None:
    job = scoring_job_start(task=scored_task, actor=alice, verifier_version=version)
    ScoringJob.objects.filter(pk=job.pk).update(status=ScoringStatus.RUNNING, done=3)
    ItemScore.objects.create(
        job=job, item=scored_task.items.get(position=0), key="reward", score=0.5
    )  # a partial first try
    assert scoring_job_execute(job_id=job.pk) == "succeeded"
    assert (
        ItemScore.objects.filter(job=job).count() == 6
        and not ItemScore.objects.filter(job=job, score=0.5).exists()
    )


def test_a_verifier_that_cannot_be_built_fails_the_job_with_its_message(
    scored_task: AnnotationTask, version: VerifierVersion, alice: User
) -> None:
    job = scoring_job_start(task=scored_task, actor=alice, verifier_version=version)
    ScoringJob.objects.filter(pk=job.pk).update(scorer={"verifier": "no-such-verifier", "params": {}})
    assert scoring_job_execute(job_id=job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == ScoringStatus.FAILED and "no-such-verifier" in job.error


def test_a_rubric_without_rule_criteria_is_refused_saying_judges_need_training(
    scored_task: AnnotationTask, alice: User
) -> None:
    judged = Rubric.objects.create(project=scored_task.project, name="judged")
    Criterion.objects.create(
        rubric=judged, name="polite", scale="likert5", min_value=1, max_value=5, scorer="judge"
    )
    with pytest.raises(InvalidInput) as err:
        scoring_job_start(task=scored_task, actor=alice, rubric=judged)
    assert "rubric" in err.value.fields and "judge model" in err.value.message


def test_a_scorer_of_another_project_is_refused(scored_task: AnnotationTask, alice: User) -> None:
    elsewhere = project_create(name="elsewhere", owner=alice)
    other = verifier_definition_create(
        project=elsewhere, actor=alice, name="v", verifier="exact"
    ).versions.get()
    with pytest.raises(InvalidInput) as err:
        scoring_job_start(task=scored_task, actor=alice, verifier_version=other)
    assert "verifier_version" in err.value.fields


@pytest.mark.parametrize(
    ("role", "status"),
    [("owner", 202), ("admin", 202), ("annotator", 403), ("viewer", 403), ("outsider", 404)],
)
def test_the_scoring_job_api_by_role(
    role: str, status: int, scored_task: AnnotationTask, version: VerifierVersion, alice: User, charlie: User,
    join: Callable[[User, str | None], User], api: Api, settings: Any,
) -> None:  # fmt: skip
    settings.RLVR_ENQUEUE = False
    if role != "owner":
        join(charlie, None if role == "outsider" else role)
    client = api(alice if role == "owner" else charlie)
    response = client.post(
        f"/api/annotation-tasks/{scored_task.pk}/scoring-jobs/",
        {"verifier_version": version.pk},
        format="json",
    )
    assert response.status_code == status, response.content
    if status == 202:
        job = response.json()
        assert job["status"] == "queued" and job["total"] == 6
        assert (
            client.get(f"/api/annotation-scoring-jobs/{job['id']}/").json()["label"]
            == "Verifier last number v1"
        )


def test_the_api_wants_exactly_one_scorer_of_this_project(
    scored_task: AnnotationTask, alice: User, api: Api
) -> None:
    url = f"/api/annotation-tasks/{scored_task.pk}/scoring-jobs/"
    assert "verifier_version" in api(alice).post(url, {}, format="json").json()["extra"]["fields"]
    assert "rubric" in api(alice).post(url, {"rubric": 999_999}, format="json").json()["extra"]["fields"]
