"""Annotation pages: a project's tasks, a new task from a run, a task's overview, the annotate page
(review pages for owners and admins are in views_review.py; a pairwise task's pages in views_pairwise.py).

Session auth; outsiders 404, viewers 403 (they have no queue). Item text reaches the annotate page through
``json_script`` and annotation.js inserts it with ``textContent`` only, so model text stays inert.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.annotation import views_pairwise
from webapp.annotation.forms import PairsFileForm, TaskFromRunForm
from webapp.annotation.machine_scorers import GROUPS, OVERALL, machine_agreement, machine_table
from webapp.annotation.models import AnnotationTask
from webapp.annotation.permissions import MANAGE_ANNOTATION
from webapp.annotation.sampling import describe_sampling
from webapp.annotation.selectors import (
    STATUSES,
    can_manage,
    eligible_annotators,
    queue_for_user,
    scoring_jobs_for_task,
    task_agreement,
    task_get_for_user,
    task_progress,
    tasks_for_project,
)
from webapp.annotation.serializers import AssignmentOut
from webapp.annotation.services import task_create_from_eval, task_create_from_run, task_reassign_unfinished
from webapp.annotation.services_pairwise import pairwise_task_create_from_eval, pairwise_task_create_from_run
from webapp.benchmarks.selectors import eval_run_get_for_user
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.experiments.selectors import run_get_for_user
from webapp.rubrics.models import Rubric
from webapp.teams.models import Project
from webapp.teams.permissions import require_role
from webapp.teams.selectors import membership_role, project_get_for_user
from webapp.verification.models import VerifierVersion


def _role(project: Project, request: HttpRequest) -> str:
    """For the top bar's role tag."""
    return str(membership_role(project=project, user=request.user) or "")


@login_required
def task_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    tasks = tasks_for_project(project=project, user=request.user)
    manager = can_manage(project=project, user=request.user)
    context = {
        "project": project,
        "tasks": tasks,
        "can_manage": manager,
        "pairs_form": PairsFileForm() if manager else None,
        "role": _role(project, request),
    }
    return render(request, "annotation/task_list.html", context)


@login_required
@require_POST
def task_new_from_pairs_file(request: HttpRequest, project_id: int) -> HttpResponse:
    """The list page's "pairwise task from a pairs file" form."""
    project = project_get_for_user(project_id=project_id, user=request.user)
    return views_pairwise.pairwise_task_from_file(request, project)


@login_required
def task_new_from_run(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(run_id=run_id, user=request.user)
    if request.GET.get("kind") == "pairwise":

        def create_pairs(**fields: Any) -> AnnotationTask:
            return pairwise_task_create_from_run(run=run, **fields)

        source = {"run": run, "title": f"Pairwise preferences on rollouts of run #{run.pk}"}
        return views_pairwise.pairwise_task_new(request, run.experiment.project, source, create_pairs)

    def create(**fields: Any) -> AnnotationTask:
        return task_create_from_run(run=run, **fields)

    source = {"run": run, "title": f"Annotate rollouts of run #{run.pk}"}
    return _task_new(request, run.experiment.project, source, create)


@login_required
def task_new_from_eval(request: HttpRequest, eval_run_id: int) -> HttpResponse:
    eval_run = eval_run_get_for_user(eval_run_id=eval_run_id, user=request.user)
    if request.GET.get("kind") == "pairwise":

        def create_pairs(**fields: Any) -> AnnotationTask:
            return pairwise_task_create_from_eval(eval_run=eval_run, **fields)

        title = f"Pairwise preferences on samples of {eval_run.benchmark.name} on {eval_run.label}"
        source = {"eval_run": eval_run, "title": title}
        return views_pairwise.pairwise_task_new(request, eval_run.benchmark.project, source, create_pairs)

    def create(**fields: Any) -> AnnotationTask:
        return task_create_from_eval(eval_run=eval_run, **fields)

    title = f"Annotate samples of {eval_run.benchmark.name} on {eval_run.label}"
    return _task_new(request, eval_run.benchmark.project, {"eval_run": eval_run, "title": title}, create)


def _task_new(
    request: HttpRequest, project: Project, source: dict[str, Any], create: Callable[..., AnnotationTask]
) -> HttpResponse:
    """The new-task form over any source: ``create`` samples it and makes the task (a service call)."""
    require_role(project=project, user=request.user, minimum=MANAGE_ANNOTATION)
    rubrics = list(Rubric.objects.filter(project=project).order_by("name"))
    people = eligible_annotators(project=project)
    form = TaskFromRunForm(request.POST or None, rubrics=rubrics, people=people)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            task = create(
                rubric=data["rubric"], actor=request.user, name=data["name"], instructions=data["instructions"],
                sampling=form.sampling(), annotators_per_item=data["annotators_per_item"], annotators=data["annotators"],
            )  # fmt: skip
        except InvalidInput as err:
            for path, problems in err.fields.items():
                form.add_error(path.split(".")[-1] if path.split(".")[-1] in form.fields else None, problems)
        except (ApplicationError, PermissionDenied) as err:
            form.add_error(None, getattr(err, "message", str(err)))
        else:
            messages.success(request, f"Created {task.name!r} with {task.items.count()} items.")
            return redirect("annotation:task-detail", task_id=task.pk)
    context = {
        "project": project,
        **source,
        "form": form,
        "rubrics": rubrics,
        "role": _role(project, request),
    }
    return render(request, "annotation/task_new.html", context)


def _machine_panel(task: AnnotationTask, request: HttpRequest) -> dict[str, Any]:
    """The task page's "machine scorer vs people" panel: the scorers on offer, the chosen one's agreement,
    what the items can be scored with here, and the scoring jobs.

    The jobs are read before the scores: a job seen finished here has its scores in the table read after it, and
    one seen running is polled by the page, which reloads when it ends. Read the other way round, a job that
    finished between the two reads would show as finished with its scores not on offer, and nothing would reload."""
    jobs = scoring_jobs_for_task(task=task, limit=10)
    table = machine_table(task=task)
    scorers = table[0]
    chosen = request.GET.get("scorer", "")[:200] or (scorers[0].key if scorers else "")
    criterion = request.GET.get("criterion", "")[:80] or OVERALL
    result, error = None, ""
    if scorers:
        try:
            result = machine_agreement(task=task, scorer=chosen, criterion=criterion, table=table)
        except InvalidInput as err:
            error = err.message
    return {
        "has_scorers": bool(scorers),
        "scorers": [(group, [s for s in scorers if s.group == group]) for group in GROUPS],
        "chosen": chosen,
        "criterion": criterion,
        "result": result,
        "error": error,
        "versions": list(
            VerifierVersion.objects.filter(definition__project=task.project)
            .select_related("definition").order_by("definition__name", "-number")[:100]
        ),
        "rubrics": list(
            Rubric.objects.filter(project=task.project).annotate(rules=Count("criteria", filter=Q(criteria__scorer="rule")))
            .filter(rules__gt=0).order_by("name")
        ),
        "jobs": jobs,
        "active_jobs": [j.pk for j in jobs if not j.finished],
    }  # fmt: skip


@login_required
def task_detail(request: HttpRequest, task_id: int) -> HttpResponse:
    task = task_get_for_user(task_id=task_id, user=request.user)
    if task.kind == "pairwise":
        return views_pairwise.pairwise_task_detail(request, task)
    manager = can_manage(project=task.project, user=request.user)
    queue = list(queue_for_user(task=task, user=request.user))
    shown = request.GET.get("status", "")
    machine = _machine_panel(task, request) if manager else None
    context: dict[str, Any] = {
        "task": task,
        "sampling_text": describe_sampling(task.sampling),
        "machine": machine,
        "page_data": {
            "scoring_job_api": "/api/annotation-scoring-jobs/",
            "active_jobs": machine["active_jobs"] if machine else [],
        },
        "project": task.project,
        "queue": [a for a in queue if a.status == shown] if shown in STATUSES else queue,
        "shown_status": shown if shown in STATUSES else "",
        "statuses": STATUSES,
        "counts": {s: sum(1 for a in queue if a.status == s) for s in STATUSES},
        "has_work": bool(queue),
        "can_manage": manager,
        "progress": task_progress(task=task) if manager else None,
        "eligible": [u.username for u in eligible_annotators(project=task.project)] if manager else [],
        "agreement": task_agreement(task=task) if manager else None,
        "role": _role(task.project, request),
    }
    return render(request, "annotation/task_detail.html", context)


@login_required
@require_POST
def task_reassign(request: HttpRequest, task_id: int) -> HttpResponse:
    """The progress table's "move unfinished work" form."""
    task = task_get_for_user(task_id=task_id, user=request.user)
    try:
        result = task_reassign_unfinished(
            task=task, actor=request.user, from_username=request.POST.get("from_annotator", ""),
            to_username=request.POST.get("to_annotator", ""),
        )  # fmt: skip
    except (ApplicationError, PermissionDenied) as err:
        messages.error(request, getattr(err, "message", str(err)))
    else:
        kept = f"; {result['kept']} stay (already assigned to both)" if result["kept"] else ""
        messages.success(request, f"Moved {result['moved']} unfinished item(s){kept}.")
    return redirect("annotation:task-detail", task_id=task.pk)


@login_required
def annotate(request: HttpRequest, task_id: int) -> HttpResponse:
    task = task_get_for_user(task_id=task_id, user=request.user)
    if task.kind == "pairwise":
        return views_pairwise.pairwise_annotate(request, task)
    queue = AssignmentOut(queue_for_user(task=task, user=request.user), many=True).data
    start = request.GET.get("assignment", "")
    page_data = {
        "task_id": task.pk,
        "criteria": task.criteria,
        "queue": queue,
        "start_assignment": int(start) if start.isdigit() else None,
        "assignment_api": "/api/annotation-assignments/",
        "task_url": reverse("annotation:task-detail", args=[task.pk]),
    }
    context = {
        "task": task,
        "project": task.project,
        "page_data": page_data,
        "role": _role(task.project, request),
    }
    return render(request, "annotation/annotate.html", context)
