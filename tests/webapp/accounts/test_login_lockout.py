"""Brute force on each login path locks (django-axes): a username (any case, from any address) at the failure
limit, an address only at its own, much looser limit, so users sharing an address are not locked out by
another's guesses; X-Forwarded-For rotation resets nothing; the answer says what was locked; an admin unlocks."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from pytest_django import Settings
from rest_framework.test import APIClient

from webapp.accounts.lockout import client_ip

LIMIT = 5  # AXES_FAILURE_LIMIT's default (RLVR_LOGIN_FAILURE_LIMIT)
RIGHT = "pw-alice-123"
PAGES = ("/accounts/login/", "/admin/login/")


def post_login(path: str, username: str, password: str, **meta: Any) -> Any:
    """The test client's response (``.json()`` for the API)."""
    if path.startswith("/api/"):
        return APIClient().post(path, {"username": username, "password": password}, format="json", **meta)
    return Client().post(path, {"username": username, "password": password}, **meta)


def fail(path: str, times: int, username: str = "alice", **meta: Any) -> None:
    """``times`` wrong passwords; the LIMIT-th failure is itself answered with the lockout."""
    for i in range(times):
        assert post_login(path, username, f"wrong-{i}", **meta).status_code in (200, 400, 429)


@pytest.fixture
def staff_alice(alice: User) -> User:
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    return alice


@pytest.mark.parametrize("path", [*PAGES, "/api/auth/token/"])
def test_the_right_password_is_refused_after_too_many_failures(path: str, staff_alice: User) -> None:
    fail(path, LIMIT)
    response = post_login(path, "alice", RIGHT)
    assert response.status_code == 429
    assert "_auth_user_id" not in Client().session


@pytest.mark.parametrize("path", PAGES)
def test_a_locked_page_says_why_and_how_to_unlock(path: str, alice: User) -> None:
    fail(path, LIMIT)
    text = post_login(path, "alice", RIGHT).content.decode()
    assert "Too many failed sign-ins for this username; try again in 15 minutes" in text
    assert "axes_reset_username" in text


def test_a_locked_api_login_answers_in_the_one_error_shape(alice: User) -> None:
    fail("/api/auth/token/", LIMIT)
    response = post_login("/api/auth/token/", "alice", RIGHT)
    body = response.json()
    assert set(body) == {"message", "extra"}
    assert body["message"].startswith("Too many failed sign-ins for this username; try again in 15 minutes")
    assert body["extra"] == {
        "locked": "username",
        "failure_limit": LIMIT,
        "retry_after_minutes": 15,
        "username": "alice",
    }
    assert response["Retry-After"] == "900"


def test_a_locked_login_issues_no_token(alice: User) -> None:
    from webapp.accounts.models import ApiToken

    fail("/api/auth/token/", LIMIT)
    post_login("/api/auth/token/", "alice", RIGHT)
    assert not ApiToken.objects.exists()


def test_fewer_failures_than_the_limit_still_let_the_right_password_in(alice: User) -> None:
    fail("/api/auth/token/", LIMIT - 1)
    assert post_login("/api/auth/token/", "alice", RIGHT).status_code == 200


def test_failures_for_one_username_do_not_lock_another_user_at_the_same_address(alice: User) -> None:
    User.objects.create_user(username="bob", password="pw-bob-123")
    fail("/api/auth/token/", LIMIT, username="alice")
    assert post_login("/api/auth/token/", "bob", "pw-bob-123").status_code == 200


def test_a_few_failures_each_for_many_usernames_do_not_lock_the_address(alice: User) -> None:
    for i in range(LIMIT * 2):
        fail("/api/auth/token/", 1, username=f"guess-{i}")
    assert post_login("/api/auth/token/", "alice", RIGHT).status_code == 200


def test_the_address_locks_at_its_own_looser_limit(settings: Settings, alice: User) -> None:
    settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT * 2
    for i in range(LIMIT * 2 - 1):
        fail("/api/auth/token/", 1, username=f"guess-{i}")
    assert post_login("/api/auth/token/", "alice", RIGHT).status_code == 200  # a success resets only alice's
    fail("/api/auth/token/", 1, username="guess-last")
    response = post_login("/api/auth/token/", "alice", RIGHT)
    assert response.status_code == 429
    assert response.json()["extra"]["locked"] == "address"


def test_a_locked_address_is_named_in_the_answer(settings: Settings, alice: User) -> None:
    settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT + 1
    for i in range(LIMIT + 1):
        fail("/api/auth/token/", 1, username=f"guess-{i}")
    message = post_login("/api/auth/token/", "alice", RIGHT).json()["message"]
    assert message.startswith("Too many failed sign-ins from this address")
    assert "axes_reset_ip" in message and "this username" not in message


def test_the_address_limit_is_much_looser_than_the_username_limit(settings: Settings) -> None:
    assert settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT >= 20 * settings.AXES_FAILURE_LIMIT


@pytest.mark.parametrize("variant", ["ALICE", "alice ", " Alice"])
def test_case_and_space_variants_of_a_username_count_against_it(variant: str, alice: User) -> None:
    fail("/api/auth/token/", LIMIT - 1)
    fail("/api/auth/token/", 1, username=variant)
    assert post_login("/api/auth/token/", "alice", RIGHT).status_code == 429


def test_rotating_x_forwarded_for_does_not_reset_the_username_lock(alice: User) -> None:
    for i in range(LIMIT):
        fail("/api/auth/token/", 1, HTTP_X_FORWARDED_FOR=f"10.0.0.{i + 1}")
    response = post_login("/api/auth/token/", "alice", RIGHT, HTTP_X_FORWARDED_FOR="10.9.9.9")
    assert response.status_code == 429


def test_one_username_from_many_addresses_locks_the_username(alice: User) -> None:
    for i in range(LIMIT):
        fail("/accounts/login/", 1, REMOTE_ADDR=f"198.51.100.{i + 1}")
    assert post_login("/accounts/login/", "alice", RIGHT, REMOTE_ADDR="203.0.113.9").status_code == 429


def test_rotating_x_forwarded_for_does_not_reset_the_address_lock(settings: Settings, alice: User) -> None:
    settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT
    for i in range(LIMIT):
        fail("/api/auth/token/", 1, username=f"guess-{i}", HTTP_X_FORWARDED_FOR=f"10.0.0.{i + 1}")
    response = post_login("/api/auth/token/", "alice", RIGHT, HTTP_X_FORWARDED_FOR="10.9.9.9")
    assert response.status_code == 429


def test_rotating_x_forwarded_for_does_not_reset_the_token_endpoint_throttle(
    settings: Settings, alice: User
) -> None:
    settings.AXES_ENABLED = False  # the throttle alone: 20 attempts a minute per address
    for i in range(20):
        post_login("/api/auth/token/", "alice", "wrong", HTTP_X_FORWARDED_FOR=f"10.0.{i}.1")
    response = post_login("/api/auth/token/", "alice", RIGHT, HTTP_X_FORWARDED_FOR="10.1.1.1")
    assert response.status_code == 429
    assert response.json()["message"].startswith("Request was throttled")


def test_behind_one_proxy_only_the_right_most_forwarded_address_counts(
    settings: Settings, alice: User
) -> None:
    settings.RLVR_TRUSTED_PROXIES = 1
    settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT
    for i in range(LIMIT):
        fail(
            "/api/auth/token/", 1, username=f"guess-{i}", HTTP_X_FORWARDED_FOR=f"10.0.0.{i + 1}, 203.0.113.7"
        )
    locked = post_login("/api/auth/token/", "alice", RIGHT, HTTP_X_FORWARDED_FOR="10.9.9.9, 203.0.113.7")
    other = post_login("/api/auth/token/", "alice", RIGHT, HTTP_X_FORWARDED_FOR="203.0.113.7, 192.0.2.1")
    assert (locked.status_code, other.status_code) == (429, 200)


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "10.0.0.1", "127.0.0.1"),
        (1, "10.0.0.1, 203.0.113.7", "203.0.113.7"),
        (2, "10.0.0.1, 203.0.113.7, 192.0.2.5", "203.0.113.7"),
        (3, "203.0.113.7", "203.0.113.7"),
        (1, "", "127.0.0.1"),
    ],
)
def test_the_client_address_is_the_one_the_trusted_proxies_saw(
    settings: Settings, proxies: int, forwarded: str, expected: str
) -> None:
    from django.test import RequestFactory

    settings.RLVR_TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR="127.0.0.1")
    assert client_ip(request) == expected


def test_an_admin_unlocks_a_username_with_the_management_command(alice: User) -> None:
    for i in range(LIMIT):
        fail("/accounts/login/", 1, REMOTE_ADDR=f"198.51.100.{i + 1}")
    call_command("axes_reset_username", "alice", verbosity=0)
    assert post_login("/accounts/login/", "alice", RIGHT, REMOTE_ADDR="203.0.113.9").status_code == 302


def test_under_asgi_a_locked_api_login_is_the_same_429(alice: User) -> None:
    """daphne runs the middleware asynchronously, where django-axes calls the lockout answer differently."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    async def attempt(password: str) -> Any:
        body = {"username": "alice", "password": password}
        return await AsyncClient().post("/api/auth/token/", body, content_type="application/json")

    for i in range(LIMIT):
        async_to_sync(attempt)(f"wrong-{i}")
    response = async_to_sync(attempt)(RIGHT)
    assert response.status_code == 429
    assert response.json()["message"].startswith("Too many failed sign-ins for this username")
