"""``/healthz``: 200 when every dependency answers, 503 naming the ones that do not.

Dependencies: the database, Redis (the Celery broker: without it no run, evaluation or verification job
reaches a worker) and, when it is a different Redis, the Channels layer (live run pages). Each is
reported as ``"ok"`` or ``"down: <ErrorType> <detail>"``, e.g.
``{"status": "unhealthy", "database": "ok", "redis": "down: ConnectionError Error 111 connecting to ..."}``.

Used by docker-compose's healthcheck and the embedded stack's start-up wait (webapp/stack.py), which
starts its own Redis before the web process. Unauthenticated and cheap: one ``SELECT 1`` and one ``PING``
per server, each with a one-second timeout.
"""

from __future__ import annotations

from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

TIMEOUT_S = 1.0
DETAIL_CHARS = 200  # enough for redis-py's "Error 111 connecting to host:port. Connection refused."


def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _check_database(), "redis": _check_redis(settings.REDIS_URL)}
    layer_url = channel_layer_redis_url()
    if layer_url is not None and layer_url != settings.REDIS_URL:
        checks["channel_layer"] = _check_redis(layer_url)
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unhealthy", **checks}, status=200 if healthy else 503
    )


def channel_layer_redis_url() -> str | None:
    """The Redis URL of the default Channels layer; None when it is not a Redis layer (the in-memory one)."""
    layer: dict[str, Any] = settings.CHANNEL_LAYERS.get("default", {})
    if "redis" not in str(layer.get("BACKEND", "")).lower():
        return None
    hosts = layer.get("CONFIG", {}).get("hosts") or []
    first = hosts[0] if hosts else None
    if isinstance(first, str):
        return first
    if isinstance(first, dict) and isinstance(first.get("address"), str):
        return str(first["address"])
    return None


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as err:  # any driver error means "not healthy"
        return _down(err)
    return "ok"


def _check_redis(url: str) -> str:
    try:
        client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as err:  # refused, timed out, wrong password, not a Redis: all mean "down"
        return _down(err)
    return "ok"


def _down(err: Exception) -> str:
    detail = " ".join(str(err).split())[:DETAIL_CHARS]
    return f"down: {type(err).__name__} {detail}".rstrip()
