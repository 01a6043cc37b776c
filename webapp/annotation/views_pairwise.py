"""Pairwise preference pages: the new-task form (from a run or an evaluation), a task from a pairs file,
the task page, the annotate page, the disagreements page and its adjudication form.

views.py and views_review.py hand over to these when the task (or ``?kind=pairwise``) is pairwise, so the
URLs stay those of rubric tasks. Roles as there: owners/admins create, review and adjudicate; annotators
judge their own queue; viewers 403; outsiders 404. Model text reaches the annotate page only through
``json_script`` and annotation_pairwise.js inserts it with ``textContent``; elsewhere Django escapes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.annotation.forms import PairsFileForm, PairwiseTaskForm
from webapp.annotation.models import AnnotationItem, AnnotationTask, Choice
from webapp.annotation.pairs_file import file_format, staged_upload
from webapp.annotation.pairwise_agreement import MIN_SHARED
from webapp.annotation.permissions import MANAGE_ANNOTATION
from webapp.annotation.selectors import (
    STATUSES,
    can_manage,
    eligible_annotators,
    queue_for_user,
    task_progress,
)
from webapp.annotation.selectors_pairwise import (
    pairwise_disagreement_view,
    pairwise_task_agreement,
    preference_summary,
)
from webapp.annotation.serializers import AssignmentOut, task_sampling_text
from webapp.annotation.services_pairwise import pairwise_adjudication_set, pairwise_task_create_from_file
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.teams.models import Project
from webapp.teams.permissions import require_role
from webapp.teams.selectors import membership_role

CHOICE_LABELS = dict(Choice.choices)


def _role(project: Project, request: HttpRequest) -> str:
    return str(membership_role(project=project, user=request.user) or "")


def _form_errors(form: Any, err: Exception) -> None:
    if isinstance(err, InvalidInput):
        for path, problems in err.fields.items():
            name = path.split(".")[-1]
            form.add_error(name if name in form.fields else None, problems)
    else:
        form.add_error(None, getattr(err, "message", str(err)))


def pairwise_task_new(
    request: HttpRequest, project: Project, source: dict[str, Any], create: Callable[..., AnnotationTask]
) -> HttpResponse:
    """The pairwise form over a run or an evaluation; ``create`` is the matching service call."""
    require_role(project=project, user=request.user, minimum=MANAGE_ANNOTATION)
    people = eligible_annotators(project=project)
    form = PairwiseTaskForm(request.POST or None, people=people, with_step="run" in source)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            task = create(
                actor=request.user, name=data["name"], instructions=data["instructions"], pairing=form.pairing(),
                annotators_per_item=data["annotators_per_item"], annotators=data["annotators"],
            )  # fmt: skip
        except (ApplicationError, PermissionDenied) as err:
            _form_errors(form, err)
        else:
            messages.success(request, f"Created {task.name!r} with {task.items.count()} pairs.")
            return redirect("annotation:task-detail", task_id=task.pk)
    context = {
        "project": project,
        **source,
        "form": form,
        "kind": "pairwise",
        "role": _role(project, request),
    }
    return render(request, "annotation/task_new_pairwise.html", context)


def pairwise_task_from_file(request: HttpRequest, project: Project) -> HttpResponse:
    """POST from the annotation list page: a pairwise task over every row of an uploaded pairs file."""
    require_role(project=project, user=request.user, minimum=MANAGE_ANNOTATION)
    form = PairsFileForm(request.POST, request.FILES)
    if not form.is_valid():
        for field, problems in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(p) for p in problems)}")
        return redirect("annotation:task-list", project_id=project.pk)
    data, upload = form.cleaned_data, form.cleaned_data["file"]
    filename = (upload.name or "pairs.jsonl")[:200]
    try:
        with staged_upload(upload, filename, upload.size or 0) as path:
            task = pairwise_task_create_from_file(
                project=project, actor=request.user, path=path, fmt=file_format(filename), filename=filename,
                seed=data["seed"], name=data["name"], annotators_per_item=data["annotators_per_item"],
            )  # fmt: skip
    except InvalidInput as err:
        for problem in [p for problems in err.fields.values() for p in problems] or [err.message]:
            messages.error(request, problem)
        return redirect("annotation:task-list", project_id=project.pk)
    except (ApplicationError, PermissionDenied) as err:
        messages.error(request, getattr(err, "message", str(err)))
        return redirect("annotation:task-list", project_id=project.pk)
    messages.success(request, f"Created {task.name!r} with {task.items.count()} pairs.")
    return redirect("annotation:task-detail", task_id=task.pk)


def pairwise_task_detail(request: HttpRequest, task: AnnotationTask) -> HttpResponse:
    manager = can_manage(project=task.project, user=request.user)
    queue = list(queue_for_user(task=task, user=request.user))
    shown = request.GET.get("status", "")
    context: dict[str, Any] = {
        "task": task,
        "project": task.project,
        "sampling_text": task_sampling_text(task),
        "queue": [a for a in queue if a.status == shown] if shown in STATUSES else queue,
        "shown_status": shown if shown in STATUSES else "",
        "statuses": STATUSES,
        "counts": {s: sum(1 for a in queue if a.status == s) for s in STATUSES},
        "has_work": bool(queue),
        "can_manage": manager,
        "progress": task_progress(task=task) if manager else None,
        "eligible": [u.username for u in eligible_annotators(project=task.project)] if manager else [],
        "agreement": pairwise_task_agreement(task=task) if manager else None,
        "summary": preference_summary(task=task) if manager else None,
        "min_shared": MIN_SHARED,
        "choice_labels": CHOICE_LABELS,
        "role": _role(task.project, request),
    }
    return render(request, "annotation/task_detail_pairwise.html", context)


def pairwise_annotate(request: HttpRequest, task: AnnotationTask) -> HttpResponse:
    queue = AssignmentOut(queue_for_user(task=task, user=request.user), many=True).data
    start = request.GET.get("assignment", "")
    page_data = {
        "task_id": task.pk,
        "queue": queue,
        "start_assignment": int(start) if start.isdigit() and len(start) < 12 else None,
        "assignment_api": "/api/annotation-assignments/",
        "task_url": reverse("annotation:task-detail", args=[task.pk]),
    }
    context = {
        "task": task,
        "project": task.project,
        "page_data": page_data,
        "role": _role(task.project, request),
    }
    return render(request, "annotation/annotate_pairwise.html", context)


def pairwise_disagreements(request: HttpRequest, task: AnnotationTask, page: int) -> HttpResponse:
    hide = request.GET.get("hide_resolved") == "1"
    view = pairwise_disagreement_view(task=task, hide_resolved=hide, page=page)
    for row in view["items"]:
        row["votes_text"] = ", ".join(f"{CHOICE_LABELS[c].lower()} × {n}" for c, n in row["votes"].items())
    context = {
        "task": task,
        "project": task.project,
        "view": view,
        "hide_resolved": hide,
        "here": request.get_full_path(),
        "choices": Choice.choices,
        "choice_labels": CHOICE_LABELS,
        "role": _role(task.project, request),
    }
    return render(request, "annotation/disagreements_pairwise.html", context)


def pairwise_adjudicate(request: HttpRequest, task: AnnotationTask, item: AnnotationItem) -> str:
    """The disagreements page's "final choice" form; returns the message it left."""
    choice = None if "clear" in request.POST else request.POST.get("choice", "")[:16]
    try:
        pairwise_adjudication_set(
            item=item, actor=request.user, choice=choice, note=request.POST.get("note", "")
        )
    except (ApplicationError, PermissionDenied) as err:
        text = getattr(err, "message", str(err))
        messages.error(request, text)
        return text
    text = (
        f"Final choice of pair {item.position + 1} removed."
        if choice is None
        else f"Final choice of pair {item.position + 1}: {CHOICE_LABELS[choice].lower()}."
    )
    messages.success(request, text)
    return text
