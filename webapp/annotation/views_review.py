"""Review pages for owners and admins: the disagreement ranking, one item's review (with adjudication),
one annotator's work, and starting a scoring job from the task page.

Annotators and viewers get 403 on all of them (annotators never see each other's scores), outsiders 404.
Item text is rendered by Django's autoescape; the forms post back here and redirect (no script needed).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from webapp.annotation import views_pairwise
from webapp.annotation.scoring_jobs import scoring_job_start
from webapp.annotation.selectors import task_get_for_manager
from webapp.annotation.selectors_review import (
    annotator_work,
    checked_criterion,
    disagreement_ranking,
    disagreement_view,
    item_get,
    item_review,
    neighbours,
)
from webapp.annotation.services import adjudication_set
from webapp.annotation.views import _role
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.rubrics.models import Rubric
from webapp.verification.models import VerifierVersion


def _walk_query(criterion: str | None, hide_resolved: bool) -> str:
    """The query string that keeps the review page walking through the disagreement ranking."""
    params = {"via": "disagreements", **({"criterion": criterion} if criterion else {})}
    if hide_resolved:
        params["hide_resolved"] = "1"
    return urlencode(params)


def _page_number(raw: str) -> int:
    return int(raw) if raw.isdigit() and 0 < len(raw) <= 5 else 1


@login_required
def disagreements(request: HttpRequest, task_id: int) -> HttpResponse:
    task = task_get_for_manager(task_id=task_id, user=request.user)
    if task.kind == "pairwise":
        return views_pairwise.pairwise_disagreements(
            request, task, _page_number(request.GET.get("page", "1"))
        )
    hide = request.GET.get("hide_resolved") == "1"
    try:
        view = disagreement_view(
            task=task, criterion=request.GET.get("criterion") or None, hide_resolved=hide,
            page=_page_number(request.GET.get("page", "1")),
        )  # fmt: skip
    except InvalidInput as err:
        messages.error(request, err.message)
        return redirect("annotation:disagreements", task_id=task.pk)
    context = {
        "task": task,
        "project": task.project,
        "view": view,
        "criteria": task.criteria,
        "chosen": next((c for c in task.criteria if c["name"] == view["criterion"]), None),
        "walk_query": _walk_query(view["criterion"], hide),
        "here": request.get_full_path(),
        "can_adjudicate": True,  # the page itself is for owners/admins only
        "role": _role(task.project, request),
    }
    return render(request, "annotation/disagreements.html", context)


@login_required
def review_item(request: HttpRequest, task_id: int, item_id: int) -> HttpResponse:
    task = task_get_for_manager(task_id=task_id, user=request.user)
    item = item_get(task=task, item_id=item_id)
    if task.kind == "pairwise":  # a pair is reviewed on the disagreements page, with everyone's choice
        return redirect("annotation:disagreements", task_id=task.pk)
    via = request.GET.get("via") == "disagreements"
    hide = request.GET.get("hide_resolved") == "1"
    criterion = None
    if via:
        try:
            criterion = checked_criterion(task, request.GET.get("criterion") or None)
        except InvalidInput:
            via = False
    ranking = disagreement_ranking(task=task, criterion=criterion) if via else None
    walk = _walk_query(criterion, hide) if via else ""
    if via:
        back_query = _back_query(criterion, hide)
        back = reverse("annotation:disagreements", args=[task.pk]) + (f"?{back_query}" if back_query else "")
    else:
        back = reverse("annotation:task-detail", args=[task.pk])
    context: dict[str, Any] = {
        "task": task,
        "project": task.project,
        "item": item,
        "review": item_review(task=task, item=item),
        "nav": neighbours(task=task, item=item, ranking=ranking, hide_resolved=hide),
        "via": via,
        "walk_query": walk,
        "back_url": back,
        "here": request.get_full_path(),
        "role": _role(task.project, request),
    }
    return render(request, "annotation/review_item.html", context)


def _back_query(criterion: str | None, hide: bool) -> str:
    return urlencode(
        {**({"criterion": criterion} if criterion else {}), **({"hide_resolved": "1"} if hide else {})}
    )


@login_required
@require_POST
def adjudicate(request: HttpRequest, task_id: int, item_id: int) -> HttpResponse:
    """The review and disagreement pages' "final score" form; back to the page it came from."""
    task = task_get_for_manager(task_id=task_id, user=request.user)
    item = item_get(task=task, item_id=item_id)
    if task.kind == "pairwise":
        views_pairwise.pairwise_adjudicate(request, task, item)
        back = request.POST.get("next", "")
        safe = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) and back.startswith(
            f"/annotation/{task.pk}/"
        )
        return redirect(back if safe else reverse("annotation:disagreements", args=[task.pk]))
    criterion = request.POST.get("criterion", "")
    raw = request.POST.get("score", "").strip()[:50]
    try:
        score = None if "clear" in request.POST else float(raw)
    except ValueError:
        messages.error(request, f"Give the final score of {criterion} as a number.")
    else:
        try:
            adjudication_set(item=item, actor=request.user, criterion=criterion, score=score,
                             note=request.POST.get("note", ""))  # fmt: skip
        except (ApplicationError, PermissionDenied) as err:
            messages.error(request, getattr(err, "message", str(err)))
        else:
            done = "removed" if score is None else f"set to {score:g}"
            messages.success(request, f"Final score of item {item.position + 1} on {criterion} {done}.")
    back = request.POST.get("next", "")
    fallback = reverse("annotation:review-item", args=[task.pk, item.pk])
    prefix = f"/annotation/{task.pk}/"
    safe = url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) and back.startswith(
        prefix
    )
    return redirect(back if safe else fallback)


@login_required
def annotator(request: HttpRequest, task_id: int, username: str) -> HttpResponse:
    task = task_get_for_manager(task_id=task_id, user=request.user)
    if task.kind == "pairwise":  # per-annotator figures are the task page's kappa table
        return redirect("annotation:task-detail", task_id=task.pk)
    context = {
        "task": task,
        "project": task.project,
        "work": annotator_work(task=task, username=username[:150]),
        "criteria": task.criteria,
        "role": _role(task.project, request),
    }
    return render(request, "annotation/annotator.html", context)


@login_required
@require_POST
def score_items(request: HttpRequest, task_id: int) -> HttpResponse:
    """The task page's "score these items with" form: ``scorer`` is ``verifier:<version id>`` or
    ``rubric:<rubric id>``; the job is queued for a worker and the page shows its progress."""
    task = task_get_for_manager(task_id=task_id, user=request.user)
    kind, _, raw_id = request.POST.get("scorer", "").partition(":")
    pk = int(raw_id) if raw_id.isdigit() and len(raw_id) < 12 else None
    version = rubric = None
    if kind == "verifier" and pk is not None:
        version = (
            VerifierVersion.objects.select_related("definition")
            .filter(pk=pk, definition__project=task.project)
            .first()
        )
    elif kind == "rubric" and pk is not None:
        rubric = Rubric.objects.filter(pk=pk, project=task.project).first()
    if version is None and rubric is None:
        messages.error(request, "Pick a verifier version or a rubric of this project to score with.")
    else:
        try:
            job = scoring_job_start(task=task, actor=request.user, verifier_version=version, rubric=rubric)
        except (ApplicationError, PermissionDenied) as err:
            messages.error(request, getattr(err, "message", str(err)))
        else:
            messages.success(
                request,
                f"Scoring the items with {job.label}: a worker runs it; this page shows when it is done.",
            )
    return redirect(reverse("annotation:task-detail", args=[task.pk]) + "#ann-machine")
