"""Who is asking, and what a locked-out login sees.

The client address is ``REMOTE_ADDR`` unless ``RLVR_TRUSTED_PROXIES`` (N) reverse proxies stand in front:
then it is the N-th ``X-Forwarded-For`` entry from the right, the one the outermost trusted proxy wrote.
Entries further left were written by the client and are ignored, so rotating them changes nothing.
The login lockout (django-axes) and the API's throttles (REST framework) both key on this one address.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle

LOCKED_STATUS = 429  # Too Many Requests, as django-axes answers by default
UNLOCK_HOW = (
    "ask an admin to unlock it (Admin › Axes › Access attempts, or "
    "`python manage.py axes_reset_username USERNAME` / `axes_reset_ip ADDRESS`)"
)


def client_ip(request: HttpRequest) -> str:
    """The client's address as the trusted proxies (if any) saw it; never a value the client chose."""
    remote = str(request.META.get("REMOTE_ADDR") or "")
    proxies = int(settings.RLVR_TRUSTED_PROXIES)
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR") or "")
    if proxies <= 0 or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    return hops[-min(proxies, len(hops))] if hops else remote


class ClientIpRateThrottle(AnonRateThrottle):
    """AnonRateThrottle keyed by ``client_ip`` (the same address the lockout uses)."""

    def get_ident(self, request: Request) -> str:
        return client_ip(request._request)


def lockout_minutes() -> int:
    cool_off = settings.AXES_COOLOFF_TIME
    return max(1, math.ceil(cool_off / timedelta(minutes=1))) if isinstance(cool_off, timedelta) else 0


def lockout_message() -> str:
    minutes = lockout_minutes()
    wait = f"try again in {minutes} minute{'s' if minutes != 1 else ''} or " if minutes else ""
    return f"Too many failed logins for this account; {wait}{UNLOCK_HOW}."


def lockout_response(request: HttpRequest, *args: Any) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: 429 in the API's error shape under /api/, the sign-in page's notice elsewhere.

    django-axes calls it as ``(request, original_response, credentials)`` from synchronous middleware and
    ``(request, credentials)`` from asynchronous middleware (daphne); the credentials are the dict."""
    credentials = next((arg for arg in args if isinstance(arg, dict)), {})
    minutes = lockout_minutes()
    extra = {
        "failure_limit": int(settings.AXES_FAILURE_LIMIT),
        "retry_after_minutes": minutes,
        "username": str(credentials.get("username") or ""),
    }
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"message": lockout_message(), "extra": extra}, status=LOCKED_STATUS)
    else:
        context = {"message": lockout_message(), **extra}
        response = render(request, "registration/locked_out.html", context, status=LOCKED_STATUS)
    if minutes:
        response["Retry-After"] = str(minutes * 60)
    return response


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout check for every login that comes with a request (the sign-in page, the admin,
    the token endpoint). A call without one (a shell, Django's test client) has no address to lock and
    no attacker behind it; axes would raise there, so it passes on to the password check."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)  # type: ignore[no-any-return]
