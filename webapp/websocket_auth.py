"""Websocket authentication by API token: ``ws://host/ws/runs/<id>/?token=<token>``.

Browsers send their session cookie (Channels' AuthMiddlewareStack reads it); the CLI and scripts have
no session, so a ``token`` query parameter authenticates them with the same check the REST API makes
(webapp/accounts/tokens.py: hashed, expiring, revocable tokens). A bad, expired or revoked token leaves
the connection anonymous, and the consumer refuses it (close code 4401).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from django.contrib.auth.models import AnonymousUser, User


@database_sync_to_async
def user_for_token(token: str) -> User | AnonymousUser:
    from webapp.accounts.tokens import TokenRefused, check_token

    try:
        user = check_token(token).user
    except TokenRefused:
        return AnonymousUser()
    return user if isinstance(user, User) else AnonymousUser()


class TokenAuthMiddleware(BaseMiddleware):
    """Sets ``scope["user"]`` from ``?token=`` when present; otherwise keeps the session user."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        tokens = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        if tokens:
            scope = dict(scope, user=await user_for_token(tokens[0]))
        return await super().__call__(scope, receive, send)
