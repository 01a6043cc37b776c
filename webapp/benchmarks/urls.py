from django.urls import path

from webapp.benchmarks import api

urlpatterns = [
    path("projects/<int:project_id>/benchmarks/", api.BenchmarkListApi.as_view(), name="benchmark-list"),
    path("projects/<int:project_id>/benchmark-files/", api.BenchmarkFileApi.as_view(), name="benchmark-file"),
    path(
        "projects/<int:project_id>/benchmark-results/",
        api.ResultsExportApi.as_view(),
        name="benchmark-results",
    ),
    path("benchmarks/<int:benchmark_id>/", api.BenchmarkDetailApi.as_view(), name="benchmark-detail"),
    path(
        "benchmarks/<int:benchmark_id>/evals/", api.BenchmarkEvalListApi.as_view(), name="benchmark-eval-list"
    ),
    path("evals/<int:eval_run_id>/", api.EvalDetailApi.as_view(), name="eval-detail"),
    path("evals/<int:eval_run_id>/cancel/", api.EvalCancelApi.as_view(), name="eval-cancel"),
    path("evals/<int:eval_run_id>/problems/", api.EvalProblemListApi.as_view(), name="eval-problem-list"),
    path(
        "eval-problems/<int:problem_id>/samples/",
        api.EvalProblemSamplesApi.as_view(),
        name="eval-problem-samples",
    ),
]
