"""Websocket authentication by API token: ``ws://host/ws/runs/<id>/?token=<token>``.

Browsers send their session cookie (Channels' AuthMiddlewareStack reads it); the CLI and scripts have
no session, so a ``token`` query parameter authenticates them with the same token the REST API takes.
A bad token leaves the connection anonymous, and the consumer refuses it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from django.contrib.auth.models import AnonymousUser, User


@database_sync_to_async
def user_for_token(key: str) -> User | AnonymousUser:
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return AnonymousUser()
    return token.user


class TokenAuthMiddleware(BaseMiddleware):
    """Sets ``scope["user"]`` from ``?token=`` when present; otherwise keeps the session user."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        tokens = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        if tokens:
            scope = dict(scope, user=await user_for_token(tokens[0]))
        return await super().__call__(scope, receive, send)
