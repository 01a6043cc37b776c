"""Benchmark pages, in the ``benchmarks`` namespace (included by webapp/pages/urls.py)."""

from django.urls import path

from webapp.benchmarks import views

app_name = "benchmarks"

urlpatterns = [
    path("projects/<int:project_id>/benchmarks/", views.benchmark_list, name="list"),
    path("benchmarks/<int:benchmark_id>/", views.benchmark_detail, name="detail"),
    path("evals/<int:eval_run_id>/", views.eval_detail, name="eval"),
    path("evals/<int:eval_run_id>/cancel/", views.eval_cancel, name="eval-cancel"),
]
