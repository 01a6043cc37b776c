"""Reward evaluation pages: every member reads the list and may start one from its form; outsiders get 404; a bad
form shows the service's message; a queued job's page shows its progress and its export links."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.pages.conftest import browser_as  # noqa: F401 -- fixture
from webapp.rewards.models import RewardJob
from webapp.teams.models import Project

BrowserAs = Callable[[str | None], Client]

FORM = {"name": "first", "sources_json": '[{"name": "chain_arithmetic"}]', "audit": "on", "audit_problems": "3",
        "bon_benchmark": "builtin:chain_arithmetic", "bon_policy": "tiny:chain", "bon_n": "8", "bon_problems": "10"}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_queue(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False


@pytest.mark.parametrize("role", ["owner", "viewer", "annotator"])
def test_members_see_the_list_and_start_an_evaluation_from_the_form(
    browser_as: BrowserAs,  # noqa: F811
    project: Project,
    role: str,
) -> None:
    client = browser_as(role)
    page = client.get(f"/projects/{project.pk}/reward-evaluations/")
    assert page.status_code == 200 and b'id="evaluation-form"' in page.content
    resp = client.post(f"/projects/{project.pk}/reward-evaluations/", {**FORM, "bon": "on"})
    job = RewardJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/reward-evaluations/{job.pk}/"
    assert job.config["best_of_n"]["n"] == 8 and job.config["audit_problems"] == 3 and job.name == "first"
    detail = client.get(resp["Location"])
    assert detail.status_code == 200
    assert b'id="progress-card"' in detail.content and b"/api/reward-evaluations/" in detail.content
    assert f"/api/reward-evaluations/{job.pk}/export/csv/".encode() in detail.content


def test_outsiders_get_404_on_both_pages(browser_as: BrowserAs, project: Project) -> None:  # noqa: F811
    browser_as("owner").post(f"/projects/{project.pk}/reward-evaluations/", FORM)
    job = RewardJob.objects.get()
    outsider = browser_as("outsider")
    assert outsider.get(f"/projects/{project.pk}/reward-evaluations/").status_code == 404
    assert outsider.post(f"/projects/{project.pk}/reward-evaluations/", FORM).status_code == 404
    assert outsider.get(f"/reward-evaluations/{job.pk}/").status_code == 404
    assert browser_as(None).get(f"/reward-evaluations/{job.pk}/").status_code == 302  # to the sign-in page


def test_a_bad_form_keeps_its_values_and_says_why(browser_as: BrowserAs, project: Project) -> None:  # noqa: F811
    resp = browser_as("owner").post(
        f"/projects/{project.pk}/reward-evaluations/",
        {**FORM, "sources_json": '[{"name": "nope"}]'},
        follow=True,
    )
    assert resp.status_code == 200 and RewardJob.objects.count() == 0
    assert b"Unknown reward source" in resp.content and b"nope" in resp.content
