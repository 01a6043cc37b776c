"""Content-Security-Policy on every response (Django 5.2 has none built in; 6.0 adds it).

Pages load scripts only from /static/ (plotly.js too: the plotly package's own copy), so ``script-src
'self'`` holds; templates keep no inline ``<script>`` or ``on...=`` handlers. Styles allow 'unsafe-inline':
progress bars set ``style="width: …"`` and plotly.js injects its own ``<style>``; a style cannot run code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self' ws: wss:",
    "frame-ancestors 'none'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
))  # fmt: skip


@sync_and_async_middleware
def content_security_policy_middleware(
    get_response: Callable[[HttpRequest], Any],
) -> Callable[[HttpRequest], Any]:
    """Adds POLICY unless a view set its own header; runs in either mode, so daphne needs no thread hop."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            response: HttpResponse = await get_response(request)
            response.headers.setdefault("Content-Security-Policy", POLICY)
            return response

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponse:
        response: HttpResponse = get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response

    return middleware
