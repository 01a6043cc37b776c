from django.contrib import admin
from django.http import HttpRequest

from webapp.verification.models import VerifierDefinition, VerifierTestCase, VerifierVersion


@admin.register(VerifierDefinition)
class VerifierDefinitionAdmin(admin.ModelAdmin[VerifierDefinition]):
    list_display = ("name", "project", "created_by", "updated_at")
    list_filter = ("project",)
    search_fields = ("name",)


@admin.register(VerifierVersion)
class VerifierVersionAdmin(admin.ModelAdmin[VerifierVersion]):
    list_display = ("definition", "number", "verifier", "test_status", "created_by", "created_at")
    list_filter = ("verifier", "test_status")
    readonly_fields = (
        "definition",
        "number",
        "verifier",
        "params",
        "test_status",
        "test_results",
        "created_by",
    )

    def has_change_permission(self, request: HttpRequest, obj: VerifierVersion | None = None) -> bool:
        return False  # versions are immutable: a change is a new version (see models.py)


@admin.register(VerifierTestCase)
class VerifierTestCaseAdmin(admin.ModelAdmin[VerifierTestCase]):
    list_display = ("definition", "name", "expected_correct", "created_at")
