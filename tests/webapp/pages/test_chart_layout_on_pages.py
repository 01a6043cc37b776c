"""The run and compare pages start from the member's own chart layout (webapp/workspaces/chart_layouts.py),
and the compare page says which runs can be drawn against wall-clock time or tokens."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client

from webapp.experiments.models import MetricPoint, Run
from webapp.experiments.services import run_launch
from webapp.teams.models import Project
from webapp.workspaces.chart_layouts import default_chart_layout
from webapp.workspaces.models import ChartLayout

SPEC = {"pinned": ["actor/kl"], "panels": [], "x_axis": "time", "smoothing": 0.9, "log": True}


def test_the_run_page_carries_the_members_own_layout(
    browser_as: Callable[[str | None], Client], project: Project, run: Run, alice: User, bob: User
) -> None:
    ChartLayout.objects.create(project=project, user=alice, spec=SPEC)
    mine = browser_as("owner").get(f"/runs/{run.pk}/").context["page_data"]
    assert (mine["project_id"], mine["chart_layout"]) == (project.pk, SPEC)
    theirs = browser_as("viewer").get(f"/runs/{run.pk}/").context["page_data"]  # bob, who saved none
    assert theirs["chart_layout"] == default_chart_layout()


def test_the_compare_page_says_which_runs_logged_the_x_axis_series(
    browser_as: Callable[[str | None], Client], project: Project, run: Run, alice: User
) -> None:
    second = run_launch(experiment=run.experiment, actor=alice)
    MetricPoint.objects.bulk_create(
        [
            MetricPoint(run=run, step=1, key="perf/elapsed_s", value=2.0),
            MetricPoint(run=run, step=1, key="perf/tokens_total", value=64.0),
            MetricPoint(run=second, step=1, key="perf/elapsed_s", value=3.0),
        ]
    )
    ChartLayout.objects.create(project=project, user=alice, spec=SPEC)
    data = (
        browser_as("owner")
        .get(f"/projects/{project.pk}/compare/?runs={run.pk},{second.pk}")
        .context["page_data"]
    )
    assert [r["axes"] for r in data["runs"]] == [
        {"time": True, "tokens": True},
        {"time": True, "tokens": False},
    ]
    assert data["chart_layout"] == SPEC and data["project_id"] == project.pk
