from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def test_a_username_and_password_get_a_token(api: Api, alice: User) -> None:
    response = api(None).post("/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, format="json")
    assert response.status_code == 200
    assert response.json() == {"token": Token.objects.get(user=alice).key, "username": "alice"}


def test_asking_twice_gives_the_same_token(api: Api, alice: User) -> None:
    body = {"username": "alice", "password": "pw-alice-123"}
    first = api(None).post("/api/auth/token/", body, format="json").json()["token"]
    assert api(None).post("/api/auth/token/", body, format="json").json()["token"] == first


def test_a_wrong_password_is_a_400_without_saying_which_part_was_wrong(api: Api, alice: User) -> None:
    response = api(None).post("/api/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert response.json()["message"] == "Wrong username or password."


def test_the_token_authenticates_api_calls(project: Project, alice: User) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    assert [p["slug"] for p in client.get("/api/projects/").json()] == ["lab"]


def test_a_bad_token_is_a_401(db: None) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get("/api/projects/")
    assert (response.status_code, response.json()["message"]) == (401, "Invalid token.")


def test_the_browser_signs_in_with_a_session(client: object, alice: User) -> None:
    from django.test import Client

    assert isinstance(client, Client)
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302
    assert client.get("/api/projects/", HTTP_ACCEPT="application/json").status_code == 200
