"""/api/ routes of reward-source evaluations (included from webapp/api/urls.py)."""

from django.urls import URLPattern, path

from webapp.rewards import evaluation_api as api

urlpatterns: list[URLPattern] = [
    path("projects/<int:project_id>/reward-evaluations/", api.EvaluationListApi.as_view(),
         name="reward-evaluation-list"),
    path("reward-evaluations/<int:job_id>/", api.EvaluationDetailApi.as_view(), name="reward-evaluation-detail"),
    path("reward-evaluations/<int:job_id>/cancel/", api.EvaluationCancelApi.as_view(),
         name="reward-evaluation-cancel"),
    path("reward-evaluations/<int:job_id>/export/<str:kind>/", api.EvaluationExportApi.as_view(),
         name="reward-evaluation-export"),
]  # fmt: skip
