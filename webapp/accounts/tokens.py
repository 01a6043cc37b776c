"""Issue, check and revoke API tokens. The only place that turns a token into its digest.

A token reads ``rlvr_<43 url-safe characters>``: 32 random bytes. Tokens issued by the older plaintext
scheme (Django REST framework's authtoken, 40 hex characters) were hashed into this table by migration
0002 and keep working until they expire.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from webapp.accounts.models import ApiToken

TOKEN_PREFIX = "rlvr_"
SHOWN_PREFIX_LEN = 12  # "rlvr_" and 7 random characters
LAST_USED_RESOLUTION = timedelta(minutes=1)  # at most one write per token per minute
GET_A_NEW_ONE = "run `rlvr login` (or POST /api/auth/token/) to get a new one"


class TokenRefused(Exception):
    """The token is unknown, expired or revoked; the message says which and how to get a new one."""


@dataclass(frozen=True)
class IssuedToken:
    """A new token: ``token`` is its only copy in clear, to hand to the user once."""

    record: ApiToken
    token: str


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_lifetime() -> timedelta:
    return timedelta(days=int(settings.RLVR_API_TOKEN_DAYS))


def issue_token(user: User, name: str = "") -> IssuedToken:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = timezone.now()
    record = ApiToken.objects.create(
        user=user, name=name[:100], prefix=token[:SHOWN_PREFIX_LEN], digest=digest_of(token),
        created_at=now, expires_at=now + token_lifetime(),
    )  # fmt: skip
    return IssuedToken(record=record, token=token)


def check_token(token: str) -> ApiToken:
    """The live token record for ``token`` (its user loaded), or TokenRefused saying why not."""
    record = ApiToken.objects.select_related("user").filter(digest=digest_of(token)).first()
    if record is None:
        raise TokenRefused(f"Invalid token: {GET_A_NEW_ONE}.")
    if record.revoked_at is not None:
        raise TokenRefused(
            f"This token was revoked on {record.revoked_at:%Y-%m-%d %H:%M} UTC: {GET_A_NEW_ONE}."
        )
    if record.is_expired:
        raise TokenRefused(f"This token expired on {record.expires_at:%Y-%m-%d %H:%M} UTC: {GET_A_NEW_ONE}.")
    if not record.user.is_active:
        raise TokenRefused("This account is deactivated: ask an admin to reactivate it.")
    now = timezone.now()
    if record.last_used_at is None or now - record.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=record.pk).update(last_used_at=now)
        record.last_used_at = now
    return record


def revoke_token(record: ApiToken) -> None:
    if record.revoked_at is None:
        record.revoked_at = timezone.now()
        record.save(update_fields=["revoked_at"])


def revoke_all_tokens(user: User) -> int:
    """Revoke every live token of ``user`` (after a password change); returns how many."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
