"""``/projects/<id>/compare/?runs=1,2``: overlay runs' metrics (static/js/compare.js) with the member's chart
layout (pins, panels, x-axis: webapp/workspaces/chart_layouts.py) and diff configs
(webapp/pages/selectors_compare.py: outside runs' configs read as native paths)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.experiments.models import Run
from webapp.experiments.selectors import metric_keys_for_run, runs_for_project
from webapp.pages.selectors_compare import config_diff
from webapp.pages.views_common import role_context
from webapp.teams.selectors import project_get_for_user
from webapp.workspaces.chart_layouts import chart_layout_for_member

MAX_COMPARED = 12
PREFERRED_KEYS = ("rollout/reward_mean", "rollout/accuracy", "actor/kl", "actor/entropy")  # charted first
AXIS_KEYS = {
    "time": "perf/elapsed_s",
    "tokens": "perf/tokens_total",
}  # the x-axes besides step (docs/charts.md)


def run_label(run: Run) -> str:
    """``#12 grpo-base``, with where an outside run came from: ``#13 qwen-trl (TRL)``."""
    label = f"#{run.pk} {run.experiment.name}"
    return f"{label} ({run.get_source_display()})" if run.is_external else label


def _chosen_ids(raw: str) -> list[int]:
    ids = [int(part) for part in raw.replace(" ", "").split(",") if part.isdigit()]
    return list(dict.fromkeys(ids))[:MAX_COMPARED]


@login_required
def compare(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    all_runs = list(runs_for_project(project=project).order_by("-created_at", "-id"))
    wanted = _chosen_ids(request.GET.get("runs", ""))
    by_id = {run.pk: run for run in all_runs}  # ids of other projects' runs are silently dropped
    chosen = [by_id[i] for i in wanted if i in by_id]
    keys_of = {run.pk: set(metric_keys_for_run(run=run)) for run in chosen}
    keys = sorted(set().union(*keys_of.values()))
    diff = config_diff(chosen) if chosen else []
    context = {
        "project": project,
        "all_runs": all_runs,
        "chosen": chosen,
        "chosen_ids": {run.pk for run in chosen},
        "default_keys": [k for k in PREFERRED_KEYS if k in keys] or keys[:4],
        "diff": diff,
        "differing": sum(row.differs for row in diff),
        "unreported": sum(row.unreported for row in diff),
        "outside_count": sum(run.is_external for run in chosen),
        "page_data": {
            "runs": [
                {
                    "id": run.pk,
                    "label": run_label(run),
                    "axes": {axis: key in keys_of[run.pk] for axis, key in AXIS_KEYS.items()},
                }
                for run in chosen
            ],
            "keys": keys,
            "project_id": project.pk,
            "chart_layout": chart_layout_for_member(project=project, user=request.user),
        },
        **role_context(project=project, request=request),
    }
    return render(request, "pages/compare.html", context)
