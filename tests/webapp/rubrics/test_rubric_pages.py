"""Rubric pages per role, escaping, and the experiment form's rubric picker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.rubrics.models import Rubric
from webapp.rubrics.services import rubric_create
from webapp.teams.models import Project

Join = Callable[[User, str | None], User]


def browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def rubric(project: Project, alice: User, rubric_payload: dict[str, Any]) -> Rubric:
    return rubric_create(project=project, actor=alice, **rubric_payload)


def test_the_project_page_links_to_its_rubrics(project: Project, alice: User) -> None:
    assert (
        f"/projects/{project.pk}/rubrics/" in browser(alice).get(f"/projects/{project.pk}/").content.decode()
    )


def test_a_viewer_sees_the_list_and_detail_without_edit_controls(
    rubric: Rubric, project: Project, bob: User, join: Join
) -> None:
    join(bob, "viewer")
    client = browser(bob)
    listing = client.get(f"/projects/{project.pk}/rubrics/").content.decode()
    assert "Helpful maths" in listing and "New rubric" not in listing
    detail = client.get(f"/rubrics/{rubric.pk}/").content.decode()
    assert (
        "clarity" in detail
        and "not in the training reward" in detail
        and "Train with this rubric" not in detail
    )
    assert client.get(f"/rubrics/{rubric.pk}/edit/").status_code == 403
    assert client.get(f"/projects/{project.pk}/rubrics/new/").status_code == 403
    assert (
        client.post(f"/rubrics/{rubric.pk}/delete/").status_code == 302
        and Rubric.objects.filter(pk=rubric.pk).exists()
    )


def test_an_admin_gets_the_editor_with_the_rubric_as_page_data(rubric: Rubric, bob: User, join: Join) -> None:
    join(bob, "admin")
    page = browser(bob).get(f"/rubrics/{rubric.pk}/edit/")
    assert page.status_code == 200
    data = page.context["page_data"]
    assert data["method"] == "PUT" and [c["name"] for c in data["rubric"]["criteria"]][:2] == [
        "correct",
        "boxed",
    ]
    assert "json_schema" in data["ruleTypes"]


def test_an_admin_deletes_a_rubric(rubric: Rubric, project: Project, bob: User, join: Join) -> None:
    join(bob, "admin")
    resp = browser(bob).post(f"/rubrics/{rubric.pk}/delete/")
    assert resp.status_code == 302 and resp["Location"] == f"/projects/{project.pk}/rubrics/"
    assert not Rubric.objects.filter(pk=rubric.pk).exists()


def test_outsiders_get_404_on_every_page(rubric: Rubric, project: Project, charlie: User) -> None:
    client = browser(charlie)
    for url in (
        f"/projects/{project.pk}/rubrics/",
        f"/projects/{project.pk}/rubrics/new/",
        f"/rubrics/{rubric.pk}/",
        f"/rubrics/{rubric.pk}/edit/",
    ):
        assert client.get(url).status_code == 404, url


def test_user_text_is_escaped(project: Project, alice: User) -> None:
    evil = "<script>alert(1)</script>"
    rubric = rubric_create(
        project=project,
        actor=alice,
        name=evil,
        description=evil,
        criteria=[{"name": evil[:80], "description": evil, "scorer": "human"}],
    )
    for url in (f"/projects/{project.pk}/rubrics/", f"/rubrics/{rubric.pk}/", f"/rubrics/{rubric.pk}/edit/"):
        html = browser(alice).get(url).content.decode()
        assert evil not in html, url
        assert "&lt;script&gt;" in html or "\\u003Cscript\\u003E" in html, url


def test_the_experiment_form_offers_the_rubric_picker(project: Project, alice: User) -> None:
    html = browser(alice).get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'id="rubric-picker"' in html and f"/api/projects/{project.pk}/rubrics/" in html
    assert "js/rubrics_picker.js" in html and 'id="cfg-rubric"' in html
