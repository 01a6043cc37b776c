"""Each page for each role: members see it (with only the controls their role may use), outsiders get
404, anonymous users are sent to sign in."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from webapp.experiments.models import Experiment, Run
from webapp.teams.models import Project

ROLES = ["owner", "admin", "annotator", "viewer"]
CONTROLLERS = {"owner", "admin"}


def _pages(project: Project, experiment: Experiment, run: Run) -> list[str]:
    return [
        f"/projects/{project.pk}/",
        f"/experiments/{experiment.pk}/",
        f"/runs/{run.pk}/",
        f"/projects/{project.pk}/compare/?runs={run.pk}",
    ]


@pytest.mark.parametrize("role", ROLES)
def test_members_see_every_page(
    browser_as: Callable[[str | None], Client], project: Project, experiment: Experiment, run: Run, role: str
) -> None:
    client = browser_as(role)
    for url in _pages(project, experiment, run):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("role", ROLES)
def test_the_form_pages_are_only_for_roles_that_edit(
    browser_as: Callable[[str | None], Client], project: Project, experiment: Experiment, role: str
) -> None:
    client = browser_as(role)
    expected = 200 if role in CONTROLLERS else 403
    assert client.get(f"/projects/{project.pk}/experiments/new/").status_code == expected
    assert client.get(f"/experiments/{experiment.pk}/edit/").status_code == expected


def test_outsiders_get_404_on_every_page(
    browser_as: Callable[[str | None], Client], project: Project, experiment: Experiment, run: Run
) -> None:
    client = browser_as("outsider")
    urls = [
        *_pages(project, experiment, run),
        f"/projects/{project.pk}/experiments/new/",
        f"/experiments/{experiment.pk}/edit/",
    ]
    for url in urls:
        assert client.get(url).status_code == 404, url
    for url in [
        f"/experiments/{experiment.pk}/clone/",
        f"/experiments/{experiment.pk}/launch/",
        f"/runs/{run.pk}/cancel/",
    ]:
        assert client.post(url).status_code == 404, url


def test_anonymous_users_are_sent_to_sign_in(
    browser_as: Callable[[str | None], Client], project: Project, experiment: Experiment, run: Run
) -> None:
    client = browser_as(None)
    for url in ["/", *_pages(project, experiment, run), f"/projects/{project.pk}/experiments/new/"]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url


@pytest.mark.parametrize("role", ROLES)
def test_project_page_offers_only_what_the_role_can_do(
    browser_as: Callable[[str | None], Client], project: Project, experiment: Experiment, role: str
) -> None:
    html = browser_as(role).get(f"/projects/{project.pk}/").content.decode()
    assert "addition" in html
    assert ("New experiment" in html) is (role in CONTROLLERS)
    assert ('id="member-invite"' in html) is (role in CONTROLLERS)
    assert ('class="inline member-role"' in html) is (role in CONTROLLERS)


@pytest.mark.parametrize("role", ROLES)
def test_experiment_page_offers_launch_and_clone_only_to_admins(
    browser_as: Callable[[str | None], Client], experiment: Experiment, role: str
) -> None:
    html = browser_as(role).get(f"/experiments/{experiment.pk}/").content.decode()
    for control in ("Launch run", "Clone", f"/experiments/{experiment.pk}/edit/"):
        assert (control in html) is (role in CONTROLLERS), control


@pytest.mark.parametrize("role", ROLES)
def test_run_page_offers_cancel_only_to_admins(
    browser_as: Callable[[str | None], Client], run: Run, role: str
) -> None:
    html = browser_as(role).get(f"/runs/{run.pk}/").content.decode()
    assert ("Cancel run" in html) is (role in CONTROLLERS)
    assert f"/runs/{run.pk}/rollouts/" in html


def test_project_list_shows_only_my_projects(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("outsider").get("/").content.decode()
    assert project.name not in html
    assert "Lab" in browser_as("viewer").get("/").content.decode()
