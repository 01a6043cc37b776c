from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from webapp.accounts.models import ApiToken
from webapp.accounts.tokens import issue_token
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
ALICE = {"username": "alice", "password": "pw-alice-123"}


def test_a_username_and_password_get_a_token(api: Api, alice: User) -> None:
    response = api(None).post("/api/auth/token/", ALICE, format="json")
    assert response.status_code == 200
    body = response.json()
    record = ApiToken.objects.get(user=alice)
    assert (body["username"], body["id"], body["token"][:12]) == ("alice", record.pk, record.prefix)


def test_each_login_issues_a_new_token(api: Api, alice: User) -> None:
    first = api(None).post("/api/auth/token/", ALICE, format="json").json()["token"]
    second = api(None).post("/api/auth/token/", ALICE, format="json").json()["token"]
    assert first != second
    assert ApiToken.objects.filter(user=alice).count() == 2


def test_a_wrong_password_is_a_400_without_saying_which_part_was_wrong(api: Api, alice: User) -> None:
    response = api(None).post("/api/auth/token/", {"username": "alice", "password": "nope"}, format="json")
    assert response.status_code == 400
    assert response.json()["message"] == "Wrong username or password."


def test_the_token_authenticates_api_calls(project: Project, alice: User) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(alice).token}")
    assert [p["slug"] for p in client.get("/api/projects/").json()] == ["lab"]


def test_a_bad_token_is_a_401_that_says_how_to_get_a_new_one(db: None) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get("/api/projects/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {"message": response.json()["message"], "extra": {}}
    assert "rlvr login" in response.json()["message"]


def test_the_browser_signs_in_with_a_session(client: Client, alice: User) -> None:
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", ALICE)
    assert response.status_code == 302
    assert client.get("/api/projects/", HTTP_ACCEPT="application/json").status_code == 200
