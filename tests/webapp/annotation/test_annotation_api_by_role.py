"""The annotation API for every role: outsiders 404, viewers 403 (no queue, no writes), annotators only
their own work, owners/admins create tasks and read progress, agreement and exports."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import make_user
from webapp.annotation.models import AnnotationTask, Assignment
from webapp.annotation.services import task_create_from_run
from webapp.experiments.models import Run
from webapp.rubrics.models import Rubric

ROLES = ["owner", "admin", "annotator", "viewer", "outsider"]
RANK = {"outsider": -1, "viewer": 0, "annotator": 1, "admin": 2, "owner": 3}


@pytest.fixture
def task(run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]) -> AnnotationTask:
    return task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 6}, annotators_per_item=2
    )


@pytest.fixture
def as_role(
    task: AnnotationTask,
    alice: User,
    charlie: User,
    join: Callable[[User, str | None], User],
    api: Callable[[User | None], APIClient],
) -> Callable[[str], APIClient]:
    """A client for charlie with ``role`` (owner: alice). An annotator charlie gets work in the task."""

    def make(role: str) -> APIClient:
        if role == "owner":
            return api(alice)
        join(charlie, None if role == "outsider" else role)
        if role == "annotator":
            Assignment.objects.create(item=task.items.first(), annotator=charlie)  # type: ignore[misc]
        return api(charlie)

    return make


def expected(role: str, minimum: str, ok: int) -> int:
    if role == "outsider":
        return 404
    return ok if RANK[role] >= RANK[minimum] else 403


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("method", "path", "minimum", "ok"),
    [
        ("GET", "/api/projects/{project}/annotation-tasks/", "annotator", 200),
        ("GET", "/api/annotation-tasks/{task}/", "annotator", 200),
        ("GET", "/api/annotation-tasks/{task}/queue/", "annotator", 200),
        ("GET", "/api/annotation-tasks/{task}/progress/", "admin", 200),
        ("GET", "/api/annotation-tasks/{task}/agreement/", "admin", 200),
        ("GET", "/api/annotation-tasks/{task}/export.csv", "admin", 200),
        ("GET", "/api/annotation-tasks/{task}/export.jsonl", "admin", 200),
        ("POST", "/api/projects/{project}/annotation-tasks/", "admin", 201),
    ],
)
def test_task_endpoints_by_role(
    role: str, method: str, path: str, minimum: str, ok: int, task: AnnotationTask, rubric: Rubric,
    as_role: Callable[[str], APIClient],
) -> None:  # fmt: skip
    client = as_role(role)
    url = path.format(project=task.project_id, task=task.pk)
    body = {"run": task.run_id, "rubric": rubric.pk, "sampling": {"n": 2}, "annotators_per_item": 1}
    response = client.post(url, body, format="json") if method == "POST" else client.get(url)
    assert response.status_code == expected(role, minimum, ok), getattr(response, "data", None)


@pytest.mark.parametrize("role", ROLES)
def test_only_the_assigned_annotator_reads_and_writes_an_assignment(
    role: str, task: AnnotationTask, as_role: Callable[[str], APIClient], annotators: list[User]
) -> None:
    client = as_role(role)
    danas = Assignment.objects.filter(item__task=task, annotator=annotators[0]).first()
    assert danas is not None
    for response in (
        client.get(f"/api/annotation-assignments/{danas.pk}/"),
        client.patch(f"/api/annotation-assignments/{danas.pk}/", {"scores": {"clarity": 2}}, format="json"),
        client.post(f"/api/annotation-assignments/{danas.pk}/skip/"),
    ):
        assert response.status_code == (403 if role == "viewer" else 404)


def test_annotators_see_only_their_own_queue_and_tasks(
    task: AnnotationTask, annotators: list[User], api: Callable[[User | None], APIClient], project: Any
) -> None:
    dana = annotators[0]
    queue = api(dana).get(f"/api/annotation-tasks/{task.pk}/queue/").json()
    mine = set(Assignment.objects.filter(item__task=task, annotator=dana).values_list("pk", flat=True))
    assert {a["id"] for a in queue} == mine and mine
    (listed,) = api(dana).get(f"/api/projects/{project.pk}/annotation-tasks/").json()
    assert listed["items_count"] == 6  # the whole task, though dana holds only some of its items
    assert sum(listed["mine"].values()) == len(mine) == listed["mine"]["pending"]
    lone = make_user("frank")
    from webapp.teams.models import Membership

    Membership.objects.create(project=project, user=lone, role="annotator")
    assert api(lone).get(f"/api/projects/{project.pk}/annotation-tasks/").json() == []
    assert api(lone).get(f"/api/annotation-tasks/{task.pk}/queue/").json() == []


def test_autosave_submit_and_skip_through_the_api(
    task: AnnotationTask, annotators: list[User], api: Callable[[User | None], APIClient]
) -> None:
    dana = annotators[0]
    first, second = Assignment.objects.filter(item__task=task, annotator=dana).order_by("item__position")[:2]
    client = api(dana)
    draft = client.patch(
        f"/api/annotation-assignments/{first.pk}/", {"scores": {"clarity": 2}}, format="json"
    )
    assert draft.status_code == 200 and draft.json()["status"] == "draft"
    bad = client.post(
        f"/api/annotation-assignments/{first.pk}/submit/", {"scores": {"clarity": 2}}, format="json"
    )
    assert bad.status_code == 400 and "scores.has_answer" in bad.json()["extra"]["fields"]
    full = {"has_answer": 1, "clarity": 2, "tone": 3}
    done = client.post(f"/api/annotation-assignments/{first.pk}/submit/", {"scores": full}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "submitted"
    again = client.patch(f"/api/annotation-assignments/{first.pk}/", {"scores": full}, format="json")
    assert again.status_code == 409
    assert client.post(f"/api/annotation-assignments/{second.pk}/skip/").json()["status"] == "skipped"
    statuses = {
        a["status"] for a in client.get(f"/api/annotation-tasks/{task.pk}/queue/?status=skipped").json()
    }
    assert statuses == {"skipped"}


def test_exports_stream_every_assignment_and_neutralise_formulas(
    task: AnnotationTask, alice: User, api: Callable[[User | None], APIClient]
) -> None:
    client = api(alice)
    n = Assignment.objects.filter(item__task=task).count()
    response = client.get(f"/api/annotation-tasks/{task.pk}/export.csv")
    assert response.streaming and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == n
    assert {"score:has_answer", "machine:clarity", "completion"} <= set(rows[0])
    formulas = [r["completion"] for r in rows if "calc" in r["completion"]]
    assert formulas and all(c.startswith("'=cmd") for c in formulas)  # the fixture's sample 3 is a formula
    jsonl = api(alice).get(f"/api/annotation-tasks/{task.pk}/export.jsonl")
    records = [json.loads(line) for line in b"".join(jsonl.streaming_content).decode().splitlines()]
    assert len(records) == n and any(
        r["completion"].startswith("=cmd") for r in records
    )  # JSON keeps it verbatim


def test_creating_a_task_with_a_rubric_of_another_project_is_a_clear_400(
    task: AnnotationTask, alice: User, api: Callable[[User | None], APIClient]
) -> None:
    from webapp.teams.services import project_create

    other = project_create(name="Other", owner=alice)
    foreign = Rubric.objects.create(project=other, name="x")
    body = {"run": task.run_id, "rubric": foreign.pk}
    response = api(alice).post(f"/api/projects/{task.project_id}/annotation-tasks/", body, format="json")
    assert response.status_code == 400 and "rubric" in response.json()["message"]
