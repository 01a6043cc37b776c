"""What the pages' forms do: create a project, manage members, clone, launch, cancel."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import make_user
from webapp.experiments.models import Experiment, Run, RunStatus
from webapp.teams.models import Membership, Project


def test_it_creates_a_project_owned_by_its_creator(
    browser_as: Callable[[str | None], Client], alice: User
) -> None:
    response = browser_as("owner").post("/", {"name": "Second lab", "description": "d"})
    project = Project.objects.get(name="Second lab")
    assert response["Location"] == f"/projects/{project.pk}/"
    assert Membership.objects.get(project=project, user=alice).role == "owner"


def test_an_admin_invites_by_username(
    browser_as: Callable[[str | None], Client], project: Project, charlie: User
) -> None:
    browser_as("admin").post(f"/projects/{project.pk}/members/", {"username": "charlie", "role": "annotator"})
    assert Membership.objects.get(project=project, user=charlie).role == "annotator"


def test_a_viewer_cannot_invite(
    browser_as: Callable[[str | None], Client], project: Project, charlie: User
) -> None:
    response = browser_as("viewer").post(
        f"/projects/{project.pk}/members/", {"username": "charlie", "role": "viewer"}
    )
    assert response.status_code == 302
    assert not Membership.objects.filter(project=project, user=charlie).exists()


def test_inviting_an_unknown_user_shows_the_reason(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    client = browser_as("owner")
    response = client.post(
        f"/projects/{project.pk}/members/", {"username": "nobody", "role": "viewer"}, follow=True
    )
    assert "No user named" in response.content.decode()


def test_an_owner_changes_a_role_and_removes_a_member(
    browser_as: Callable[[str | None], Client],
    project: Project,
    bob: User,
    join: Callable[[User, str | None], User],
) -> None:
    client = browser_as("owner")
    join(bob, "viewer")
    client.post(f"/projects/{project.pk}/members/bob/", {"role": "admin"})
    assert Membership.objects.get(project=project, user=bob).role == "admin"
    client.post(f"/projects/{project.pk}/members/bob/", {"action": "remove"})
    assert not Membership.objects.filter(project=project, user=bob).exists()


def test_clone_creates_a_copy_named_copy(
    browser_as: Callable[[str | None], Client], experiment: Experiment
) -> None:
    response = browser_as("admin").post(f"/experiments/{experiment.pk}/clone/")
    copy = Experiment.objects.get(name="addition (copy)")
    assert response["Location"] == f"/experiments/{copy.pk}/"
    assert copy.config == {
        **experiment.config,
        "name": "addition (copy)",
    }  # the experiment's name is the config's


def test_a_viewer_cannot_clone(browser_as: Callable[[str | None], Client], experiment: Experiment) -> None:
    browser_as("viewer").post(f"/experiments/{experiment.pk}/clone/")
    assert not Experiment.objects.filter(name="addition (copy)").exists()


def test_launch_queues_a_run_and_opens_its_page(
    browser_as: Callable[[str | None], Client], experiment: Experiment, enqueued: list[int]
) -> None:
    response = browser_as("owner").post(f"/experiments/{experiment.pk}/launch/")
    run = Run.objects.get(experiment=experiment)
    assert response["Location"] == f"/runs/{run.pk}/"
    assert run.status == RunStatus.QUEUED


def test_cancel_stops_a_queued_run(browser_as: Callable[[str | None], Client], run: Run) -> None:
    browser_as("admin").post(f"/runs/{run.pk}/cancel/")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED


def test_a_viewer_cannot_cancel(browser_as: Callable[[str | None], Client], run: Run) -> None:
    browser_as("viewer").post(f"/runs/{run.pk}/cancel/")
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED


@pytest.mark.parametrize("url", ["/", "/projects/{project}/", "/experiments/{experiment}/", "/runs/{run}/"])
def test_forms_carry_a_csrf_token(
    browser_as: Callable[[str | None], Client], project: Project, experiment: Experiment, run: Run, url: str
) -> None:
    html = (
        browser_as("owner")
        .get(url.format(project=project.pk, experiment=experiment.pk, run=run.pk))
        .content.decode()
    )
    assert html.count("<form") == html.count("csrfmiddlewaretoken")


def test_forms_reject_posts_without_csrf(project: Project, experiment: Experiment) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("dora"))
    assert client.post("/", {"name": "x"}).status_code == 403


def test_project_page_shows_latest_run_status_and_best_reward(
    browser_as: Callable[[str | None], Client], project: Project, run: Run
) -> None:
    from tests.webapp.helpers import record_steps

    record_steps(run, range(1, 8))  # rollout/reward_mean = step / 10
    html = browser_as("viewer").get(f"/projects/{project.pk}/").content.decode()
    assert f'href="/runs/{run.pk}/">#{run.pk}</a>' in html
    assert "status-queued" in html
    assert "0.400" in html  # 7 steps, fewer than the 10-step window: the mean of all of them
