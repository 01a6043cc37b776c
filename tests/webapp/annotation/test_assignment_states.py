"""pending -> draft -> submitted, skip, resubmit; only the assigned annotator; scores checked by scale."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.annotation.models import Assignment, AssignmentStatus
from webapp.annotation.services import (
    assignment_save_draft,
    assignment_skip,
    assignment_submit,
    task_create_from_run,
)
from webapp.core.errors import Conflict, InvalidInput
from webapp.experiments.models import Run
from webapp.rubrics.models import Rubric
from webapp.teams.models import Membership

FULL = {"has_answer": 1, "clarity": 4, "tone": 7.5}


@pytest.fixture
def work(run_with_rollouts: Run, rubric: Rubric, alice: User, annotators: list[User]) -> Assignment:
    task = task_create_from_run(
        run=run_with_rollouts,
        rubric=rubric,
        actor=alice,
        sampling={"n": 2},
        annotators=["dana"],
        annotators_per_item=1,
    )
    return Assignment.objects.filter(item__task=task).first()  # type: ignore[return-value]


def test_a_partial_save_makes_a_draft_that_keeps_the_scores(work: Assignment) -> None:
    saved = assignment_save_draft(assignment=work, actor=work.annotator, scores={"clarity": 3})
    saved.refresh_from_db()
    assert saved.status == AssignmentStatus.DRAFT and saved.scores == {"clarity": 3.0}


def test_submit_needs_every_criterion(work: Assignment) -> None:
    with pytest.raises(InvalidInput) as err:
        assignment_submit(assignment=work, actor=work.annotator, scores={"clarity": 3})
    assert set(err.value.fields) == {"scores.has_answer", "scores.tone"}
    done = assignment_submit(assignment=work, actor=work.annotator, scores=FULL, comment="fine")
    assert (
        done.status == AssignmentStatus.SUBMITTED and done.submitted_at is not None and done.comment == "fine"
    )


@pytest.mark.parametrize(
    ("scores", "field", "message"),
    [
        ({"has_answer": 0.5}, "scores.has_answer", "binary"),
        ({"clarity": 6}, "scores.clarity", "1 to 5"),
        ({"clarity": 2.5}, "scores.clarity", "1 to 5"),
        ({"tone": 11}, "scores.tone", "between 0 and 10"),
        ({"humour": 1}, "scores.humour", "has_answer, clarity, tone"),
    ],
)
def test_out_of_scale_scores_are_refused_with_the_fix(
    work: Assignment, scores: dict[str, float], field: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        assignment_save_draft(assignment=work, actor=work.annotator, scores=scores)
    assert message in err.value.fields[field][0]


def test_skip_then_come_back_as_a_draft(work: Assignment) -> None:
    assert assignment_skip(assignment=work, actor=work.annotator).status == AssignmentStatus.SKIPPED
    assert (
        assignment_save_draft(assignment=work, actor=work.annotator, scores={}).status
        == AssignmentStatus.DRAFT
    )


def test_a_submitted_item_is_not_reopened_by_autosave_or_skipped_but_can_be_resubmitted(
    work: Assignment,
) -> None:
    assignment_submit(assignment=work, actor=work.annotator, scores=FULL)
    with pytest.raises(Conflict, match="submit again"):
        assignment_save_draft(assignment=work, actor=work.annotator, scores={"clarity": 1})
    with pytest.raises(Conflict):
        assignment_skip(assignment=work, actor=work.annotator)
    again = assignment_submit(assignment=work, actor=work.annotator, scores={**FULL, "clarity": 2})
    assert again.status == AssignmentStatus.SUBMITTED and again.scores["clarity"] == 2.0


def test_nobody_else_can_touch_an_assignment_not_even_the_owner(work: Assignment, alice: User) -> None:
    with pytest.raises(Http404):
        assignment_save_draft(assignment=work, actor=alice, scores={})


def test_an_annotator_demoted_to_viewer_can_no_longer_write(work: Assignment) -> None:
    Membership.objects.filter(user=work.annotator).update(role="viewer")
    with pytest.raises(PermissionDenied):
        assignment_submit(assignment=work, actor=work.annotator, scores=FULL)
