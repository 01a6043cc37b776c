"""Admin: reward models and versions read-only where they are immutable; secrets listed by name only (the
ciphertext is never shown or edited here: set a value on the project's Secrets page)."""

from django.contrib import admin
from django.http import HttpRequest

from webapp.rewards.models import ProjectSecret, RewardJob, RewardModel, RewardModelVersion


@admin.register(RewardModel)
class RewardModelAdmin(admin.ModelAdmin[RewardModel]):
    list_display = ("name", "project", "created_by", "updated_at")
    list_filter = ("project",)
    search_fields = ("name",)


@admin.register(RewardModelVersion)
class RewardModelVersionAdmin(admin.ModelAdmin[RewardModelVersion]):
    list_display = ("reward_model", "number", "kind", "origin", "created_by", "created_at")
    list_filter = ("kind", "origin")
    readonly_fields = (
        "reward_model", "number", "kind", "origin", "params", "folder", "training_job", "metrics", "note",
        "created_by",
    )  # fmt: skip

    def has_change_permission(self, request: HttpRequest, obj: RewardModelVersion | None = None) -> bool:
        return False  # versions are immutable: a change is a new version (see models.py)


@admin.register(ProjectSecret)
class ProjectSecretAdmin(admin.ModelAdmin[ProjectSecret]):
    list_display = ("name", "project", "updated_by", "updated_at")
    list_filter = ("project",)
    fields = ("project", "name", "updated_by", "updated_at")
    readonly_fields = ("project", "name", "updated_by", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a value is set on the project's Secrets page, where it is encrypted

    def has_change_permission(self, request: HttpRequest, obj: ProjectSecret | None = None) -> bool:
        return False


@admin.register(RewardJob)
class RewardJobAdmin(admin.ModelAdmin[RewardJob]):
    list_display = ("id", "project", "kind", "status", "created_by", "created_at")
    list_filter = ("kind", "status")
