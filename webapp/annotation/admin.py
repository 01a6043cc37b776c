from django.contrib import admin

from webapp.annotation.models import Adjudication, AnnotationItem, AnnotationTask, Assignment, ScoringJob


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


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin[Adjudication]):
    list_display = ("item", "criterion", "score", "decided_by", "decided_at")


@admin.register(ScoringJob)
class ScoringJobAdmin(admin.ModelAdmin[ScoringJob]):
    list_display = ("task", "label", "status", "done", "total", "created_by", "created_at")
    list_filter = ("status", "kind")
    readonly_fields = ("scorer",)
