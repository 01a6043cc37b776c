"""Annotation pages per role: outsiders 404, viewers 403 (no queue), annotators their own queue, owners and
admins create tasks and see progress, agreement and export links; model text is escaped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.annotation.models import AnnotationTask, Assignment
from webapp.annotation.services import task_create_from_run
from webapp.experiments.models import Rollout, Run
from webapp.rubrics.models import Rubric

ROLES = ["owner", "admin", "annotator", "viewer", "outsider"]
RANK = {"outsider": -1, "viewer": 0, "annotator": 1, "admin": 2, "owner": 3}


@pytest.fixture
def task(run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]) -> AnnotationTask:
    Rollout.objects.filter(run=run_with_rollouts).update(prompt="<script>window.__x=1</script> 2+2=")
    return task_create_from_run(
        run=run_with_rollouts, rubric=rubric, actor=alice, sampling={"n": 4}, annotators_per_item=2
    )


def status_for(role: str, minimum: str) -> int:
    return 404 if role == "outsider" else 200 if RANK[role] >= RANK[minimum] else 403


@pytest.mark.parametrize("role", ROLES)
def test_pages_answer_by_role(
    role: str, task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as(role)
    assert client.get(f"/projects/{task.project_id}/annotation/").status_code == status_for(role, "annotator")
    assert client.get(f"/annotation/{task.pk}/").status_code == status_for(role, "annotator")
    assert client.get(f"/annotation/{task.pk}/annotate/").status_code == status_for(role, "annotator")
    assert client.get(f"/runs/{task.run_id}/annotate/new/").status_code == status_for(role, "admin")


def test_anonymous_visitors_are_sent_to_sign_in(
    task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    response = browser_as(None).get(f"/annotation/{task.pk}/annotate/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_owner_sees_progress_agreement_and_exports(
    task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    html = browser_as("owner").get(f"/annotation/{task.pk}/").content.decode()
    assert 'id="ann-progress"' in html and 'id="ann-agreement"' in html
    assert f"/api/annotation-tasks/{task.pk}/export.csv" in html
    assert 'data-criterion="clarity"' in html and 'data-annotator="dana"' in html


def test_an_annotator_sees_only_their_queue_and_no_team_figures(
    task: AnnotationTask, annotators: list[User]
) -> None:
    client = Client()
    client.force_login(annotators[0])
    html = client.get(f"/annotation/{task.pk}/").content.decode()
    assert 'id="ann-progress"' not in html and "export.csv" not in html
    mine = Assignment.objects.filter(item__task=task, annotator=annotators[0])
    others = Assignment.objects.filter(item__task=task).exclude(annotator=annotators[0])
    assert all(f'data-assignment="{a.pk}"' in html for a in mine)
    assert not any(f'data-assignment="{a.pk}"' in html for a in others)


def test_model_text_is_escaped_in_the_queue_and_json_on_the_annotate_page(
    task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as("owner")
    for url in (f"/annotation/{task.pk}/", f"/annotation/{task.pk}/annotate/"):
        html = client.get(url).content.decode()
        assert "<script>window.__x=1</script>" not in html


def test_the_run_page_links_admins_to_a_new_task_and_the_project_page_links_annotators(
    task: AnnotationTask, browser_as: Callable[[str | None], Client]
) -> None:
    owner = browser_as("owner")
    assert "Annotate these rollouts" in owner.get(f"/runs/{task.run_id}/").content.decode()
    assert (
        f"/projects/{task.project_id}/annotation/"
        in owner.get(f"/projects/{task.project_id}/").content.decode()
    )
    viewer = browser_as("viewer")
    assert "Annotate these rollouts" not in viewer.get(f"/runs/{task.run_id}/").content.decode()
    assert (
        f"/projects/{task.project_id}/annotation/"
        not in viewer.get(f"/projects/{task.project_id}/").content.decode()
    )


def test_the_new_task_form_creates_a_task_and_shows_field_errors(
    task: AnnotationTask, rubric: Rubric, browser_as: Callable[[str | None], Client]
) -> None:
    client = browser_as("owner")
    form = {"rubric": rubric.pk, "name": "second pass", "strategy": "stratified", "n": 6, "seed": 1, "strata": 3,
            "annotators_per_item": 2, "annotators": ["dana", "erin"]}  # fmt: skip
    response = client.post(f"/runs/{task.run_id}/annotate/new/", form)
    assert response.status_code == 302
    created = AnnotationTask.objects.get(name="second pass")
    assert created.items.count() == 6 and created.sampling["strategy"] == "stratified"
    bad = client.post(f"/runs/{task.run_id}/annotate/new/", {**form, "annotators_per_item": 3})
    assert bad.status_code == 200 and "needs 3 different annotators" in bad.content.decode()


def test_the_queue_filters_by_status(task: AnnotationTask, annotators: list[User]) -> None:
    from webapp.annotation.services import assignment_skip

    dana = annotators[0]
    skipped = Assignment.objects.filter(item__task=task, annotator=dana).first()
    assert skipped is not None
    assignment_skip(assignment=skipped, actor=dana)
    client = Client()
    client.force_login(dana)
    html = client.get(f"/annotation/{task.pk}/?status=skipped").content.decode()
    assert html.count("data-assignment=") == 1 and f'data-assignment="{skipped.pk}"' in html
    assert "data-assignment=" not in client.get(f"/annotation/{task.pk}/?status=submitted").content.decode()
