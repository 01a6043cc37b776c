"""Reads for team annotation: tasks, an annotator's queue, progress, agreement, export records (with the
adjudicated final scores). Reviewing submitted work (disagreements, one item, one annotator) is in
selectors_review.py; machine scorers and their agreement with people in machine_scorers.py.

``*_for_user`` selectors check the role (outsiders 404, viewers 403); the others trust their caller.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet
from django.http import Http404

from webapp.annotation.agreement import criterion_alpha, judge_vs_human
from webapp.annotation.models import (
    Adjudication,
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
    ScoringJob,
)
from webapp.annotation.permissions import MANAGE_ANNOTATION, WORK_ON_ANNOTATION
from webapp.teams.models import Project, Role
from webapp.teams.permissions import require_role, role_at_least
from webapp.teams.selectors import AnyUser

STATUSES = [s.value for s in AssignmentStatus]


def can_manage(*, project: Project, user: AnyUser) -> bool:
    """True for owners/admins (who see every annotator's work); raises for viewers and outsiders."""
    return role_at_least(
        require_role(project=project, user=user, minimum=WORK_ON_ANNOTATION), MANAGE_ANNOTATION
    )


def task_get_for_user(*, task_id: int, user: AnyUser) -> AnnotationTask:
    """The task for annotators and above; outsiders 404, viewers 403."""
    task = AnnotationTask.objects.select_related("project", "rubric", "run").filter(pk=task_id).first()
    if task is None:
        raise Http404("No such annotation task.")
    require_role(project=task.project, user=user, minimum=WORK_ON_ANNOTATION)
    return task


def task_get_for_manager(*, task_id: int, user: AnyUser) -> AnnotationTask:
    """The task for owners/admins only (progress, agreement, reviews, exports); outsiders 404, others 403
    naming the role it needs."""
    task = AnnotationTask.objects.select_related("project", "rubric", "run").filter(pk=task_id).first()
    if task is None:
        raise Http404("No such annotation task.")
    require_role(project=task.project, user=user, minimum=MANAGE_ANNOTATION)
    return task


def item_get_for_manager(*, item_id: int, user: AnyUser) -> AnnotationItem:
    """An item with its task, for owners/admins (reviewing and adjudicating); outsiders 404, others 403."""
    item = AnnotationItem.objects.select_related("task__project", "task__rubric").filter(pk=item_id).first()
    if item is None:
        raise Http404("No such annotation item.")
    require_role(project=item.task.project, user=user, minimum=MANAGE_ANNOTATION)
    return item


def scoring_job_get_for_manager(*, job_id: int, user: AnyUser) -> ScoringJob:
    job = ScoringJob.objects.select_related("task__project").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such scoring job.")
    require_role(project=job.task.project, user=user, minimum=MANAGE_ANNOTATION)
    return job


def tasks_for_project(*, project: Project, user: AnyUser) -> QuerySet[AnnotationTask]:
    """Owners/admins: every task; annotators: the tasks with work assigned to them. Annotated with counts
    of the user's own assignments by status (``mine_<status>``) and ``items``."""
    tasks = AnnotationTask.objects.filter(project=project).select_related("rubric", "run")
    if not can_manage(project=project, user=user):
        # a subquery, not a join: a join here would be reused by the counts below and narrow items_count
        tasks = tasks.filter(pk__in=Assignment.objects.filter(annotator_id=user.pk).values("item__task_id"))
    mine = {
        f"mine_{status}": Count(
            "items__assignments",
            filter=Q(items__assignments__annotator_id=user.pk, items__assignments__status=status),
        )
        for status in STATUSES
    }
    return tasks.annotate(items_count=Count("items", distinct=True), **mine)


def assignment_get_for_user(*, assignment_id: int, user: AnyUser) -> Assignment:
    """One of the user's own assignments; anyone else's (even an owner's view of it) is 404."""
    assignment = Assignment.objects.select_related("item__task__project").filter(pk=assignment_id).first()
    if assignment is None:
        raise Http404("No such assignment.")
    require_role(project=assignment.item.task.project, user=user, minimum=WORK_ON_ANNOTATION)
    if assignment.annotator_id != user.pk:
        raise Http404("No such assignment.")
    return assignment


def queue_for_user(*, task: AnnotationTask, user: AnyUser, status: str | None = None) -> QuerySet[Assignment]:
    """The user's own assignments in the task, in item order."""
    queue = Assignment.objects.filter(item__task=task, annotator_id=user.pk).select_related("item")
    if status:
        queue = queue.filter(status=status)
    return queue.order_by("item__position")


def task_progress(*, task: AnnotationTask) -> list[dict[str, Any]]:
    """Per annotator: how many assignments are pending, draft, submitted, skipped, and the total."""
    rows = (
        Assignment.objects.filter(item__task=task)
        .values("annotator__username", "status")
        .annotate(n=Count("id"))
        .order_by("annotator__username")
    )
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = table.setdefault(
            row["annotator__username"],
            {"annotator": row["annotator__username"], **dict.fromkeys(STATUSES, 0)},
        )
        entry[row["status"]] = row["n"]
    for entry in table.values():
        entry["total"] = sum(entry[s] for s in STATUSES)
        entry["done_fraction"] = (
            (entry["submitted"] + entry["skipped"]) / entry["total"] if entry["total"] else 0.0
        )
    return list(table.values())


def submitted_ratings(*, task: AnnotationTask) -> dict[str, dict[int, dict[int, float]]]:
    """criterion name -> item id -> annotator id -> score, from submitted assignments only."""
    ratings: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    rows = Assignment.objects.filter(item__task=task, status=AssignmentStatus.SUBMITTED).values_list(
        "item_id", "annotator_id", "scores"
    )
    for item_id, annotator_id, scores in rows:
        for name, value in scores.items():
            if value is not None:
                ratings[name][item_id][annotator_id] = float(value)
    return ratings


def task_agreement(*, task: AnnotationTask) -> list[dict[str, Any]]:
    """Per criterion: alpha among people (with its item count) and, for rule/judge criteria, the
    machine-vs-people alpha and exact-agreement rate."""
    ratings = submitted_ratings(task=task)
    machine: dict[str, dict[int, float]] = defaultdict(dict)
    for item_id, scores in AnnotationItem.objects.filter(task=task).values_list("pk", "machine_scores"):
        for name, record in scores.items():
            if isinstance(record, dict) and record.get("score") is not None:
                machine[name][item_id] = float(record["score"])
    result = []
    for criterion in task.criteria:
        name, scale = criterion["name"], criterion["scale"]
        people = ratings.get(name, {})
        row: dict[str, Any] = {
            "criterion": name,
            "scale": scale,
            "scorer": criterion["scorer"],
            "human": criterion_alpha(people, scale=scale).as_dict(),
            "judge_vs_human": None,
        }
        if criterion["scorer"] in ("rule", "judge"):
            row["judge_vs_human"] = judge_vs_human(
                people, machine.get(name, {}), scale=scale,
                min_value=criterion["min_value"], max_value=criterion["max_value"],
            ).as_dict()  # fmt: skip
        result.append(row)
    return result


def _adjudications_by_item(task: AnnotationTask) -> dict[int, dict[str, dict[str, Any]]]:
    found: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for a in Adjudication.objects.filter(item__task=task).select_related("decided_by"):
        found[a.item_id][a.criterion] = {
            "score": a.score, "note": a.note, "by": a.decided_by.username if a.decided_by else None,
            "at": a.decided_at.isoformat(),
        }  # fmt: skip
    return found


def export_records(*, task: AnnotationTask) -> Iterator[dict[str, Any]]:
    """One record per assignment (every status), item snapshot included, in item then annotator order.

    Every record of an item carries its adjudications: ``adjudicated`` (any criterion has a final score),
    ``final_scores`` (criterion -> the final score) and ``adjudications`` (with note, who and when)."""
    final = _adjudications_by_item(task)
    assignments = (
        Assignment.objects.filter(item__task=task)
        .select_related("item", "annotator")
        .order_by("item__position", "annotator__username")
    )
    for a in assignments.iterator(chunk_size=500):
        item = a.item
        yield {
            "task_id": task.pk,
            "item_id": item.pk,
            "position": item.position,
            "source_kind": item.source_kind,
            "source_run_id": item.source_run_id,
            "source_step": item.source_step,
            "source_rollout_id": item.source_rollout_id,
            "prompt": item.prompt,
            "completion": item.completion,
            "reference_answer": item.reference_answer,
            "reward": item.reward,
            "correct": item.correct,
            "annotator": a.annotator.username,
            "status": a.status,
            "scores": a.scores,
            "machine_scores": {k: v.get("score") for k, v in item.machine_scores.items()},
            "comment": a.comment,
            "submitted_at": a.submitted_at.isoformat() if a.submitted_at else None,
            "adjudicated": item.pk in final,
            "final_scores": {name: record["score"] for name, record in final.get(item.pk, {}).items()},
            "adjudications": final.get(item.pk, {}),
        }


def export_csv_rows(*, task: AnnotationTask) -> tuple[list[str], Iterator[list[Any]]]:
    """The CSV header (one column per criterion for people and for the machine) and its rows."""
    names = [c["name"] for c in task.criteria]
    fixed = ["task_id", "item_id", "position", "source_run_id", "source_step", "source_rollout_id", "prompt",
             "completion", "reference_answer", "reward", "correct", "annotator", "status"]  # fmt: skip
    header = (
        fixed + [f"score:{n}" for n in names] + [f"machine:{n}" for n in names] + ["comment", "submitted_at"]
        + ["adjudicated"] + [f"final:{n}" for n in names] + [f"final_note:{n}" for n in names]
    )  # fmt: skip

    def rows() -> Iterator[list[Any]]:
        for r in export_records(task=task):
            notes = {name: record["note"] for name, record in r["adjudications"].items()}
            yield (
                [r[f] for f in fixed]
                + [r["scores"].get(n) for n in names]
                + [r["machine_scores"].get(n) for n in names]
                + [r["comment"], r["submitted_at"], r["adjudicated"]]
                + [r["final_scores"].get(n) for n in names]
                + [notes.get(n) for n in names]
            )

    return header, rows()


def eligible_annotators(*, project: Project) -> list[User]:
    """Members with the annotator role or higher, by username."""
    roles = [r for r in Role if role_at_least(r, WORK_ON_ANNOTATION)]
    return list(
        User.objects.filter(memberships__project=project, memberships__role__in=roles).order_by("username")
    )


def scoring_jobs_for_task(*, task: AnnotationTask, limit: int) -> list[ScoringJob]:
    """The task's newest scoring jobs (the model orders them), at most ``limit``."""
    return list(ScoringJob.objects.filter(task=task)[:limit])
