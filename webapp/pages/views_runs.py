"""``/runs/<id>/``: status, progress, config, events and live charts (static/js/run.js); cancel/resume."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from webapp.core.errors import ApplicationError
from webapp.experiments.headline import run_headlines
from webapp.experiments.models import FINISHED_STATUSES, RunSource, RunStatus
from webapp.experiments.phases import phase_view
from webapp.experiments.retention import describe_retention, run_policy
from webapp.experiments.reward_watch import run_reward_watch
from webapp.experiments.selectors import (
    events_for_run,
    run_get_for_user,
    run_origin,
    run_phase_payload,
    run_queue_position,
)
from webapp.experiments.services import run_cancel, run_resume
from webapp.pages.views_common import report_error, role_context
from webapp.workspaces.chart_layouts import chart_layout_for_member

EVENTS_SHOWN = 200  # the newest ones; the rest are in /api/runs/<id>/events/


@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_get_for_user(run_id=run_id, user=request.user)
    events = list(events_for_run(run=run).order_by("-id")[:EVENTS_SHOWN])
    events.reverse()
    project = run.experiment.project
    headlines = run_headlines(run=run)  # greedy accuracy on held-out problems, before training and now
    reward_watch = run_reward_watch(run=run)  # learned reward vs its weight-0 monitor verifier, and the flag
    context = {
        "project": project,
        "experiment": run.experiment,
        "run": run,
        "events": events,
        "config_json": json.dumps(run.config, indent=2),
        "cancellable": run.status in (RunStatus.QUEUED, RunStatus.RUNNING)
        and not run.cancel_requested
        and (not run.is_external or run.source == RunSource.TINKER),  # the Tinker API's runs train here
        "resumable": run.status in (RunStatus.FAILED, RunStatus.CANCELLED) and not run.is_external,
        "origin": run_origin(run=run),
        "finished": run.status in FINISHED_STATUSES,
        "queue_position": run_queue_position(run=run),
        "phase": phase_view(run),  # the model build before step 1, rendered in place of "step 0 / N"
        "retention": describe_retention(run_policy(run)),
        "headlines": headlines,
        "reward_watch": reward_watch,
        "page_data": {
            "run_id": run.pk,
            "status": run.status,
            "step": run.step,
            "max_steps": run.max_steps,
            "phase": run_phase_payload(run=run),
            "headlines": headlines,
            "reward_watch": reward_watch,  # static/js/reward_watch.js
            # pins, panels, x-axis, smoothing: the member's own, shared with the project's other run pages
            "project_id": project.pk,
            "chart_layout": chart_layout_for_member(project=project, user=request.user),
        },
        **role_context(project=project, request=request),
    }
    return render(request, "pages/run_detail.html", context)


@login_required
@require_POST
def run_action(request: HttpRequest, run_id: int, action: str) -> HttpResponse:
    run = run_get_for_user(run_id=run_id, user=request.user)
    try:
        if action == "cancel":
            run_cancel(run=run, actor=request.user)
        else:
            run_resume(run=run, actor=request.user)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("ui:run-detail", run_id=run.pk)
