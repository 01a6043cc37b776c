"""The runs table page and the project page's smoothed best reward: who sees what, and that the figure is
the best 10-step mean, not the raw maximum."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from django.test import Client

from webapp.experiments.models import MetricPoint, Run
from webapp.teams.models import Project


def page_data(html: str) -> dict[str, object]:
    match = re.search(r'<script id="runs-table-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, "the page carries its data as JSON"
    data: dict[str, object] = json.loads(match.group(1))
    return data


def test_a_viewer_opens_the_runs_table_without_a_save_form(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    response = browser_as("viewer").get(f"/projects/{project.pk}/runs/")
    assert response.status_code == 200
    html = response.content.decode()
    data = page_data(html)
    assert data["table_url"] == f"/api/projects/{project.pk}/runs/table/"
    assert data["views_url"] == f"/api/projects/{project.pk}/run-views/"
    assert (data["can_save"], data["can_change_others"]) == (False, False)
    assert 'id="rt-save-form"' not in html
    assert "js/runs_table.js" in html and "<script>" not in html


def test_an_annotator_gets_the_save_form_and_an_admin_may_change_others_views(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("annotator").get(f"/projects/{project.pk}/runs/").content.decode()
    assert 'id="rt-save-form"' in html and page_data(html)["can_change_others"] is False
    assert page_data(browser_as("owner").get(f"/projects/{project.pk}/runs/").content.decode())[
        "can_change_others"
    ]


def test_an_outsider_gets_404_and_an_anonymous_visitor_signs_in_first(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    assert browser_as("outsider").get(f"/projects/{project.pk}/runs/").status_code == 404
    anonymous = browser_as(None).get(f"/projects/{project.pk}/runs/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_the_project_page_links_the_runs_table_and_ranks_by_the_smoothed_reward(
    browser_as: Callable[[str | None], Client], project: Project, run: Run
) -> None:
    values = {s: (0.95 if s == 12 else 0.25) for s in range(1, 31)}  # one lucky batch at step 12
    MetricPoint.objects.bulk_create(
        MetricPoint(run=run, step=s, key="rollout/reward_mean", value=v) for s, v in values.items()
    )
    html = browser_as("viewer").get(f"/projects/{project.pk}/").content.decode()
    assert f'href="/projects/{project.pk}/runs/"' in html and "Runs table" in html
    assert "10-step mean" in html
    assert "0.320" in html  # (9 x 0.25 + 0.95) / 10
    assert "0.950" not in html
