"""Rubric API routes (included by webapp/api/urls.py)."""

from django.urls import path

from webapp.rubrics import api

urlpatterns = [
    path("projects/<int:project_id>/rubrics/", api.RubricListApi.as_view(), name="rubric-list"),
    path("rubrics/<int:rubric_id>/", api.RubricDetailApi.as_view(), name="rubric-detail"),
]
