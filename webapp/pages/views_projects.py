"""``/``: the user's projects (and a create form); ``/projects/<id>/``: experiments and members."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Replace
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.core.errors import ApplicationError
from webapp.experiments.metric_summaries import SMOOTHING_WINDOW, best_smoothed_per_experiment
from webapp.experiments.models import Experiment, Run
from webapp.experiments.selectors import experiments_for_project
from webapp.pages.views_common import report_error, role_context
from webapp.teams.models import Project, Role
from webapp.teams.selectors import (
    membership_get,
    memberships_for_project,
    project_get_for_user,
    projects_for_user,
)
from webapp.teams.services import membership_add, membership_change_role, membership_remove, project_create

BEST_REWARD_KEY = "rollout/reward_mean"


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)  # login_required ran first
    return request.user


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        try:
            project = project_create(
                name=request.POST.get("name", ""),
                description=request.POST.get("description", ""),
                owner=_user(request),
            )
        except ApplicationError as err:
            report_error(request, err)
            return redirect("ui:project-list")
        return redirect("ui:project-detail", project_id=project.pk)
    projects = projects_for_user(user=request.user).order_by("name", "id")
    return render(request, "pages/project_list.html", {"projects": projects})


def experiments_with_latest_run(*, project: Project) -> list[Experiment]:
    """The project's experiments, each with its latest run (id, status, phase as words like Run.phase_text)
    and ``best_smoothed_reward``: the best mean of ``SMOOTHING_WINDOW`` consecutive ``rollout/reward_mean``
    values over its runs (webapp/experiments/metric_summaries.py). Not the raw maximum: that is the
    luckiest single batch, so one noisy step would make an experiment look best."""
    latest = Run.objects.filter(experiment=OuterRef("pk")).order_by("-created_at", "-id")
    experiments: list[Experiment] = list(
        experiments_for_project(project=project)
        .annotate(
            latest_run_id=Subquery(latest.values("id")[:1]),
            latest_run_status=Subquery(latest.values("status")[:1]),
            latest_run_phase=Replace(Subquery(latest.values("phase")[:1]), Value("_"), Value(" ")),
        )
        .order_by("-updated_at", "-id")
    )
    best = best_smoothed_per_experiment(
        runs=Run.objects.filter(experiment__project=project), key=BEST_REWARD_KEY
    )
    for experiment in experiments:
        experiment.best_smoothed_reward = best.get(experiment.pk)  # type: ignore[attr-defined]
    return experiments


@login_required
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    context = {
        "project": project,
        "experiments": experiments_with_latest_run(project=project),
        "smoothing_window": SMOOTHING_WINDOW,
        "members": memberships_for_project(project=project),
        "roles": Role.choices,
        **role_context(project=project, request=request),
    }
    return render(request, "pages/project_detail.html", context)


@login_required
@require_POST
def member_add(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    try:
        membership_add(
            project=project,
            actor=request.user,
            username=request.POST.get("username", "").strip(),
            role=request.POST.get("role", Role.VIEWER),
        )
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("ui:project-detail", project_id=project.pk)


@login_required
@require_POST
def member_change(request: HttpRequest, project_id: int, username: str) -> HttpResponse:
    """Change a member's role, or remove them (``action=remove``)."""
    project = project_get_for_user(project_id=project_id, user=request.user)
    membership = membership_get(project=project, username=username)
    try:
        if request.POST.get("action") == "remove":
            membership_remove(membership=membership, actor=request.user)
            if membership.user_id == request.user.pk:
                return redirect("ui:project-list")
        else:
            membership_change_role(
                membership=membership, actor=request.user, role=request.POST.get("role", "")
            )
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("ui:project-detail", project_id=project.pk)
