"""``/healthz``: 200 when the database answers, 503 when it does not; Redis is reported, not required.

Used by docker-compose's healthcheck and the embedded stack's start-up wait. Unauthenticated and cheap.
"""

from __future__ import annotations

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as err:  # any driver error means "not healthy"
        checks["database"] = f"down: {type(err).__name__}"
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        checks["redis"] = "ok"
    except Exception as err:
        checks["redis"] = f"down: {type(err).__name__}"
    healthy = checks["database"] == "ok"
    return JsonResponse({"status": "ok" if healthy else "unhealthy", **checks}, status=200 if healthy else 503)
