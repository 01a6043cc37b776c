from django.contrib import admin

from webapp.experiments.models import Checkpoint, Experiment, Run, RunEvent


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin[Experiment]):
    list_display = ("name", "project", "created_by", "created_at")
    list_filter = ("project",)
    search_fields = ("name",)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin[Run]):
    list_display = ("id", "experiment", "status", "step", "max_steps", "worker", "attempts", "created_at")
    list_filter = ("status",)
    readonly_fields = ("config", "traceback", "final_metrics")


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin[Checkpoint]):
    list_display = ("run", "step", "path", "created_at")


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin[RunEvent]):
    list_display = ("run", "created_at", "level", "kind", "message")
    list_filter = ("level", "kind")
