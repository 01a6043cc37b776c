from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from webapp.teams.models import Membership, Project

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


def test_creating_a_project_returns_it_with_the_owner_role(api: Api, alice: User) -> None:
    response = api(alice).post("/api/projects/", {"name": "Math RL", "description": "gsm8k"}, format="json")
    assert response.status_code == 201
    assert response.json() | {"id": 0, "created_at": ""} == {
        "id": 0,
        "name": "Math RL",
        "slug": "math-rl",
        "description": "gsm8k",
        "created_at": "",
        "role": "owner",
    }


def test_the_project_list_shows_only_my_projects(api: Api, project: Project, bob: User) -> None:
    assert api(bob).get("/api/projects/").json() == []


def test_an_outsider_gets_404_for_a_project(api: Api, project: Project, bob: User) -> None:
    assert api(bob).get(f"/api/projects/{project.pk}/").status_code == 404


def test_members_are_listed_with_their_roles(
    api: Api, project: Project, join: Join, alice: User, bob: User
) -> None:
    join(bob, "viewer")
    members = api(bob).get(f"/api/projects/{project.pk}/members/").json()
    assert [(m["username"], m["role"]) for m in members] == [("alice", "owner"), ("bob", "viewer")]


def test_an_owner_adds_changes_and_removes_a_member(
    api: Api, project: Project, alice: User, bob: User
) -> None:
    client = api(alice)
    url = f"/api/projects/{project.pk}/members/"
    assert client.post(url, {"username": "bob", "role": "viewer"}, format="json").status_code == 201
    assert client.patch(f"{url}bob/", {"role": "admin"}, format="json").json()["role"] == "admin"
    assert client.delete(f"{url}bob/").status_code == 204
    assert not Membership.objects.filter(user=bob).exists()


def test_a_viewer_cannot_add_members(
    api: Api, project: Project, join: Join, bob: User, charlie: User
) -> None:
    join(bob, "viewer")
    response = api(bob).post(
        f"/api/projects/{project.pk}/members/", {"username": "charlie", "role": "viewer"}, format="json"
    )
    assert response.status_code == 403
    assert "admin role" in response.json()["message"]


def test_removing_the_last_owner_is_a_conflict(api: Api, project: Project, alice: User) -> None:
    response = api(alice).delete(f"/api/projects/{project.pk}/members/alice/")
    assert response.status_code == 409
    assert "last owner" in response.json()["message"]


def test_an_unknown_member_is_404(api: Api, project: Project, alice: User) -> None:
    assert (
        api(alice)
        .patch(f"/api/projects/{project.pk}/members/zed/", {"role": "viewer"}, format="json")
        .status_code
        == 404
    )
