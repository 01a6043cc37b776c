"""Moving one annotator's unfinished work to another: what moves, what stays, who may, and the page form."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import make_user
from webapp.annotation.models import AnnotationTask, Assignment, AssignmentStatus
from webapp.annotation.services import (
    assignment_save_draft,
    assignment_skip,
    assignment_submit,
    task_create_from_run,
    task_reassign_unfinished,
)
from webapp.core.errors import InvalidInput
from webapp.experiments.models import Run
from webapp.rubrics.models import Rubric


@pytest.fixture
def task(run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]) -> AnnotationTask:
    """6 items, each to dana and erin (k=2 of the two named annotators)."""
    return task_create_from_run(
        run=run_with_rollouts,
        rubric=rubric,
        actor=alice,
        sampling={"n": 6},
        annotators_per_item=2,
        annotators=["dana", "erin"],
    )


def _work(task: AnnotationTask, name: str) -> list[Assignment]:
    return list(
        Assignment.objects.filter(item__task=task, annotator__username=name).order_by("item__position")
    )


def test_unfinished_work_moves_and_submitted_scores_stay(
    task: AnnotationTask, alice: User, annotators: list[User], join: Callable[[User, str | None], User]
) -> None:
    dana = annotators[0]
    frank = join(make_user("frank"), "annotator")
    first, second, third, *_ = _work(task, "dana")
    full = {"has_answer": 1, "clarity": 4, "tone": 7}
    assignment_submit(assignment=first, actor=dana, scores=full)
    assignment_save_draft(assignment=second, actor=dana, scores={"clarity": 2}, comment="unsure")
    assignment_skip(assignment=third, actor=dana)

    assert task_reassign_unfinished(task=task, actor=alice, from_username="dana", to_username="frank") == {
        "moved": 5,
        "kept": 0,
    }
    assert [a.status for a in _work(task, "dana")] == [AssignmentStatus.SUBMITTED]
    moved = _work(task, "frank")
    assert len(moved) == 5 and all(
        a.status == AssignmentStatus.PENDING and a.scores == {} and a.comment == "" for a in moved
    )
    assert frank.pk and Assignment.objects.filter(item__task=task).count() == 12  # nothing lost or duplicated


def test_items_the_receiver_already_has_stay_with_the_giver(task: AnnotationTask, alice: User) -> None:
    result = task_reassign_unfinished(task=task, actor=alice, from_username="dana", to_username="erin")
    assert result == {"moved": 0, "kept": 6}  # erin already annotates every item of this k=2 task
    assert len(_work(task, "dana")) == 6


def test_bad_requests_say_what_to_fix(
    task: AnnotationTask, alice: User, annotators: list[User], join: Callable[[User, str | None], User]
) -> None:
    join(make_user("victor"), "viewer")
    with pytest.raises(InvalidInput, match="cannot annotate"):
        task_reassign_unfinished(task=task, actor=alice, from_username="dana", to_username="victor")
    with pytest.raises(InvalidInput, match="two different"):
        task_reassign_unfinished(task=task, actor=alice, from_username="dana", to_username="dana")
    with pytest.raises(InvalidInput, match="no unfinished work"):
        task_reassign_unfinished(task=task, actor=alice, from_username="alice", to_username="dana")
    with pytest.raises(PermissionDenied):
        task_reassign_unfinished(task=task, actor=annotators[1], from_username="dana", to_username="erin")


def test_the_api_and_the_page_form(
    task: AnnotationTask,
    alice: User,
    join: Callable[[User, str | None], User],
    api: Callable[[User | None], APIClient],
    browser_as: Callable[[str | None], Client],
) -> None:
    join(make_user("frank"), "annotator")
    join(make_user("gina"), "annotator")
    answer = api(alice).post(
        f"/api/annotation-tasks/{task.pk}/reassign/",
        {"from_annotator": "dana", "to_annotator": "frank"},
        format="json",
    )
    assert answer.status_code == 200 and answer.json() == {"moved": 6, "kept": 0}
    owner = browser_as("owner")
    page = owner.get(f"/annotation/{task.pk}/").content.decode()
    assert 'id="ann-reassign"' in page and "<option>gina</option>" in page
    moved = owner.post(
        f"/annotation/{task.pk}/reassign/", {"from_annotator": "erin", "to_annotator": "gina"}, follow=True
    )
    assert "Moved 6 unfinished item(s)." in moved.content.decode() and len(_work(task, "gina")) == 6
    refused = owner.post(
        f"/annotation/{task.pk}/reassign/", {"from_annotator": "erin", "to_annotator": "gina"}, follow=True
    )
    assert "has no unfinished work" in refused.content.decode()
