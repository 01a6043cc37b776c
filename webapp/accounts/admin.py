"""API tokens in the admin: see who holds which (never the token), revoke them. Tokens are issued by
``POST /api/auth/token/`` (``rlvr login``) only, so the admin cannot add one. Login lockouts are under
Axes › Access attempts: deleting a user's or an address's attempts unlocks it."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from webapp.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ("prefix", "user", "name", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("user", "prefix", "created_at", "last_used_at", "revoked_at")
    fields = ("user", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token{'s' if count != 1 else ''}.", messages.SUCCESS)
