from django.contrib import admin

from webapp.benchmarks.models import Benchmark, EvalRun


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin[Benchmark]):
    list_display = ("name", "project", "source", "created_by", "created_at")
    list_filter = ("project", "source")
    readonly_fields = ("config",)


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin[EvalRun]):
    list_display = ("id", "benchmark", "label", "status", "problems_done", "problems_total", "created_at")
    list_filter = ("status",)
    readonly_fields = ("config", "metrics", "ci", "timings", "traceback")
