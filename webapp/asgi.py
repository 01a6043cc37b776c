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


def _no_twisted_form_parsing() -> None:
    """daphne's request class is Twisted's, which parses a multipart POST body itself into ``request.args``
    (``email.message_from_bytes`` of the whole body), which daphne never reads: a 64 MB upload cost the web
    process 770 MB there before Django saw a byte. Django parses the body, streaming files to disk."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # another ASGI server
        return
    # Twisted sets the flag per request in Request.__init__; a property that reads False and ignores the
    # assignment turns it off for every request.
    WebRequest._parsePOSTFormSubmission = property(lambda self: False, lambda self, value: None)


_no_twisted_form_parsing()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns())))
        ),
    }
)
