from django.contrib import admin

from webapp.annotation.models import AnnotationItem, AnnotationTask, Assignment


@admin.register(AnnotationTask)
class AnnotationTaskAdmin(admin.ModelAdmin[AnnotationTask]):
    list_display = ("name", "project", "rubric", "run", "annotators_per_item", "created_by", "created_at")
    list_filter = ("project",)
    readonly_fields = ("criteria", "sampling")


@admin.register(AnnotationItem)
class AnnotationItemAdmin(admin.ModelAdmin[AnnotationItem]):
    list_display = ("task", "position", "source_run_id", "source_step", "source_rollout_id", "reward")
    readonly_fields = ("machine_scores", "source")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin[Assignment]):
    list_display = ("item", "annotator", "status", "updated_at", "submitted_at")
    list_filter = ("status",)
