"""The ASGI websocket stack: ``?token=`` authenticates clients without a session (the CLI)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.utils import timezone

from webapp.accounts.models import ApiToken
from webapp.accounts.tokens import issue_token, revoke_token
from webapp.websocket_auth import TokenAuthMiddleware


def user_seen_with(query_string: bytes) -> Any:
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen["user"] = scope.get("user")

    async def call() -> None:
        await TokenAuthMiddleware(app)({"type": "websocket", "query_string": query_string}, None, None)

    async_to_sync(call)()
    return seen["user"]


@pytest.mark.django_db(transaction=True)
def test_a_valid_token_sets_the_user() -> None:
    alice = User.objects.create_user(username="alice", password="pw-alice-123")
    assert user_seen_with(f"token={issue_token(alice).token}".encode()) == alice


@pytest.mark.django_db(transaction=True)
def test_a_bad_token_leaves_the_connection_anonymous() -> None:
    assert user_seen_with(b"token=nope").is_authenticated is False


@pytest.mark.django_db(transaction=True)
def test_a_token_of_a_deactivated_user_is_refused() -> None:
    bob = User.objects.create_user(username="bob", password="pw-bob-123", is_active=False)
    assert user_seen_with(f"token={issue_token(bob).token}".encode()).is_authenticated is False


@pytest.mark.django_db(transaction=True)
def test_an_expired_token_leaves_the_connection_anonymous() -> None:
    alice = User.objects.create_user(username="alice", password="pw-alice-123")
    issued = issue_token(alice)
    ApiToken.objects.filter(pk=issued.record.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert user_seen_with(f"token={issued.token}".encode()).is_authenticated is False


@pytest.mark.django_db(transaction=True)
def test_a_revoked_token_leaves_the_connection_anonymous() -> None:
    alice = User.objects.create_user(username="alice", password="pw-alice-123")
    issued = issue_token(alice)
    revoke_token(issued.record)
    assert user_seen_with(f"token={issued.token}".encode()).is_authenticated is False


def test_without_a_token_the_session_user_is_kept() -> None:
    assert user_seen_with(b"") is None  # nothing set here; AuthMiddlewareStack's session user stays


def test_the_asgi_application_routes_http_and_websockets() -> None:
    from webapp.asgi import application

    assert set(application.application_mapping) == {"http", "websocket"}
