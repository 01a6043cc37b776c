"""Reward-source evaluation pages (joined into urls_pages.py, the ``rewards`` namespace)."""

from django.urls import URLPattern, path

from webapp.rewards import evaluation_views as views

urlpatterns: list[URLPattern] = [
    path("projects/<int:project_id>/reward-evaluations/", views.evaluation_list, name="evaluation-list"),
    path("reward-evaluations/<int:job_id>/", views.evaluation_detail, name="evaluation-detail"),
]
