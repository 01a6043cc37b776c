"""``/projects/<id>/runs/``: the runs table (static/js/runs_table.js), which reads its rows from
``/api/projects/<id>/runs/table/`` and its saved views from ``/api/projects/<id>/run-views/``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from webapp.experiments.metric_summaries import MAX_SUMMARY_KEYS, SMOOTHING_WINDOW
from webapp.pages.views_common import role_context
from webapp.pages.views_compare import MAX_COMPARED
from webapp.teams.permissions import role_at_least
from webapp.teams.selectors import project_get_for_user
from webapp.workspaces.run_table import MAX_TABLE_RUNS
from webapp.workspaces.run_views import CHANGE_OTHERS_VIEWS, MAX_COLUMNS, SAVE_RUN_VIEWS


@login_required
def runs_table(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    roles = role_context(project=project, request=request)
    role = str(roles["role"])
    page_data = {
        "project_id": project.pk,
        "table_url": reverse("run-table", kwargs={"project_id": project.pk}),
        "views_url": reverse("run-view-list", kwargs={"project_id": project.pk}),
        "view_url": reverse("run-view-detail", kwargs={"view_id": 0}),  # the page swaps in the id
        "compare_url": reverse("ui:compare", kwargs={"project_id": project.pk}),
        "run_url": reverse("ui:run-detail", kwargs={"run_id": 0}),
        "user_id": request.user.pk,
        "can_save": role_at_least(role, SAVE_RUN_VIEWS),
        "can_change_others": role_at_least(role, CHANGE_OTHERS_VIEWS),
        "smoothing_window": SMOOTHING_WINDOW,
        "max_metric_keys": MAX_SUMMARY_KEYS,
        "max_columns": MAX_COLUMNS,
        "max_runs": MAX_TABLE_RUNS,
        "max_compared": MAX_COMPARED,
    }
    context = {"project": project, "page_data": page_data, "smoothing_window": SMOOTHING_WINDOW, **roles}
    return render(request, "pages/runs_table.html", context)
