"""Who is asking, and what a locked-out login sees.

The client address is ``REMOTE_ADDR`` unless ``RLVR_TRUSTED_PROXIES`` (N) reverse proxies stand in front:
then it is the N-th ``X-Forwarded-For`` entry from the right, the one the outermost trusted proxy wrote.
Entries further left were written by the client and are ignored, so rotating them changes nothing.
The login lockout (django-axes) and the API's throttles (REST framework) both key on this one address.

What locks (webapp/settings.py): a username (case and surrounding spaces ignored) after
``AXES_FAILURE_LIMIT`` failures from any address, and an address after ``RLVR_LOGIN_ADDRESS_FAILURE_LIMIT``
failures for any usernames, both within the cool-off. An address is never locked at the username's limit:
every user behind one proxy or NAT shares it. The lockout answer says which of the two was locked.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle

LOCKED_STATUS = 429  # Too Many Requests, as django-axes answers by default
LOCKED_USERNAME = "username"
LOCKED_ADDRESS = "address"
UNLOCK_HOW = {
    LOCKED_USERNAME: "ask an admin to unlock it (Admin › Axes › Access attempts, or "
    "`python manage.py axes_reset_username USERNAME`)",
    LOCKED_ADDRESS: "ask an admin to unlock it (Admin › Axes › Access attempts, or "
    "`python manage.py axes_reset_ip ADDRESS`)",
}


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


def lockout_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """AXES_USERNAME_CALLABLE: the username a failure counts against, whatever its case or surrounding spaces."""
    data = credentials if credentials is not None else getattr(request, "POST", {})
    field = getattr(settings, "AXES_USERNAME_FORM_FIELD", "username")  # set by django-axes at start-up
    raw = data.get(field) if hasattr(data, "get") else None
    if raw is None:
        return None
    return str(raw).strip().casefold() or None


def address_failures(request: HttpRequest, ip_address: str) -> int:
    """Failed sign-ins from ``ip_address`` within the cool-off, for any usernames (django-axes' own records)."""
    since = get_cool_off_threshold(request)
    attempts = AccessAttempt.objects.filter(ip_address=ip_address, attempt_time__gte=since)
    return int(attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0)


class LockoutHandler(AxesDatabaseHandler):  # type: ignore[misc]
    """django-axes' database handler plus the per-address limit; notes on the request which one refused."""

    def is_locked(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> bool:
        if super().is_locked(request, credentials):
            request.rlvr_locked = LOCKED_USERNAME  # type: ignore[attr-defined]
            return True
        address = getattr(request, "axes_ip_address", None)
        if address and address_failures(request, address) >= int(settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT):
            request.rlvr_locked = LOCKED_ADDRESS  # type: ignore[attr-defined]
            # The middleware answers with the lockout only when this is set; axes sets it itself only for
            # its own parameters (when a failure reaches the username limit).
            request.axes_locked_out = True  # type: ignore[attr-defined]
            request.axes_credentials = credentials  # type: ignore[attr-defined]
            return True
        return False


def lockout_message(locked: str = LOCKED_USERNAME) -> str:
    minutes = lockout_minutes()
    wait = f"try again in {minutes} minute{'s' if minutes != 1 else ''} or " if minutes else ""
    if locked == LOCKED_ADDRESS:
        limit = int(settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT)
        return f"Too many failed sign-ins from this address ({limit} for any usernames); {wait}{UNLOCK_HOW[locked]}."
    return f"Too many failed sign-ins for this username; {wait}{UNLOCK_HOW[LOCKED_USERNAME]}."


def lockout_response(request: HttpRequest, *args: Any) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: 429 in the API's error shape under /api/, the sign-in page's notice elsewhere.

    django-axes calls it as ``(request, original_response, credentials)`` from synchronous middleware and
    ``(request, credentials)`` from asynchronous middleware (daphne); the credentials are the dict."""
    credentials = next((arg for arg in args if isinstance(arg, dict)), {})
    minutes = lockout_minutes()
    locked = str(
        getattr(request, "rlvr_locked", LOCKED_USERNAME)
    )  # a failure that reached the limit: the username
    limit = (
        settings.RLVR_LOGIN_ADDRESS_FAILURE_LIMIT if locked == LOCKED_ADDRESS else settings.AXES_FAILURE_LIMIT
    )
    extra = {
        "locked": locked,
        "failure_limit": int(limit),
        "retry_after_minutes": minutes,
        "username": str(credentials.get("username") or ""),
    }
    message = lockout_message(locked)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"message": message, "extra": extra}, status=LOCKED_STATUS)
    else:
        context = {"message": message, **extra}
        response = render(request, "registration/locked_out.html", context, status=LOCKED_STATUS)
    if minutes:
        response["Retry-After"] = str(minutes * 60)
    return response


class LockoutBackend(AxesStandaloneBackend):
    """django-axes' lockout check for every login that comes with a request (the sign-in page, the admin,
    the token endpoint). A call without one (a shell, Django's test client) has no address to lock and
    no attacker behind it; axes would raise there, so it passes on to the password check."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)  # type: ignore[no-any-return]
