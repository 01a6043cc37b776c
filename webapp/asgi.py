"""ASGI entry point (daphne): HTTP goes to Django, websockets to the realtime consumers.

Websockets pass the allowed-hosts origin check, then session auth (browser) and token auth (``?token=``,
CLI), then webapp/realtime/routing.py's ``websocket_urlpatterns``; each consumer checks membership.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
django_asgi_app = get_asgi_application()  # sets Django up before anything below imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from webapp.websocket_auth import TokenAuthMiddleware  # noqa: E402


def websocket_urlpatterns() -> list[Any]:
    """The realtime routes; an empty list while webapp/realtime/routing.py does not exist yet."""
    try:
        from webapp.realtime.routing import websocket_urlpatterns as patterns
    except ModuleNotFoundError as err:
        if err.name != "webapp.realtime.routing":
            raise
        return []
    return list(patterns)


application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns())))
        ),
    }
)
