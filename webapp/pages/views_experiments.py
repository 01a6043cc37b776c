"""Experiment pages: the schema-generated create/edit form, the detail page, clone and launch."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.core.errors import ApplicationError
from webapp.datafiles.selectors import dataset_choices
from webapp.experiments.models import Experiment
from webapp.experiments.selectors import experiment_get_for_user, runs_for_project
from webapp.experiments.services import experiment_create, run_launch
from webapp.pages.forms_config import config_sections, form_page_data
from webapp.pages.selectors_form import form_models
from webapp.pages.views_common import report_error, role_context
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, require_role
from webapp.teams.selectors import project_get_for_user


def _form_page(request: HttpRequest, *, project: Project, experiment: Experiment | None) -> HttpResponse:
    require_role(project=project, user=request.user, minimum=EDIT_EXPERIMENTS)
    config = experiment.config if experiment else None
    wanted = request.GET.get("dataset", "")  # "Train on this dataset" links preselect it
    context = {
        "project": project,
        "experiment": experiment,
        "sections": config_sections(config=config),
        "models": form_models(project=project),
        "page_data": form_page_data(
            config=config,
            datasets=dataset_choices(project=project),
            dataset=int(wanted) if wanted.isdigit() else None,
        ),
        "submit_url": f"/api/experiments/{experiment.pk}/"
        if experiment
        else f"/api/projects/{project.pk}/experiments/",
        "submit_method": "PATCH" if experiment else "POST",
        **role_context(project=project, request=request),
    }
    return render(request, "pages/experiment_form.html", context)


@login_required
def experiment_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    return _form_page(request, project=project, experiment=None)


@login_required
def experiment_edit(request: HttpRequest, experiment_id: int) -> HttpResponse:
    experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
    return _form_page(request, project=experiment.project, experiment=experiment)


@login_required
def experiment_detail(request: HttpRequest, experiment_id: int) -> HttpResponse:
    experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
    runs = runs_for_project(project=experiment.project, experiment_id=experiment.pk).order_by(
        "-created_at", "-id"
    )
    context = {
        "project": experiment.project,
        "experiment": experiment,
        "config_json": json.dumps(experiment.config, indent=2),
        "runs": runs,
        **role_context(project=experiment.project, request=request),
    }
    return render(request, "pages/experiment_detail.html", context)


@login_required
@require_POST
def experiment_clone(request: HttpRequest, experiment_id: int) -> HttpResponse:
    experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
    try:
        copy = experiment_create(
            project=experiment.project,
            actor=request.user,
            name=f"{experiment.name} (copy)",
            description=experiment.description,
            config=experiment.config,
        )
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
        return redirect("ui:experiment-detail", experiment_id=experiment.pk)
    return redirect("ui:experiment-detail", experiment_id=copy.pk)


@login_required
@require_POST
def experiment_launch(request: HttpRequest, experiment_id: int) -> HttpResponse:
    experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
    try:
        run = run_launch(experiment=experiment, actor=request.user)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
        return redirect("ui:experiment-detail", experiment_id=experiment.pk)
    return redirect("ui:run-detail", run_id=run.pk)
