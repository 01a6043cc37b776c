"""API tokens, stored as a SHA-256 digest: the database never holds a token that would sign anyone in."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """One token a user holds (one per ``rlvr login``). The token itself is shown once, at creation.

    ``digest`` is the SHA-256 of the whole token: a token is random (256 bits), so a plain hash is as good
    as a slow one here, and a lookup by digest needs no scan. ``prefix`` is its first characters, kept so
    a user can tell their tokens apart in the list; it cannot sign anyone in.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(
        max_length=100, blank=True, help_text="Where it is used, e.g. the CLI's host name."
    )
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to recognise it.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired
