"""Rubric pages, in the ``rubrics`` namespace (included by webapp/pages/urls.py)."""

from django.urls import path

from webapp.rubrics import views

app_name = "rubrics"

urlpatterns = [
    path("projects/<int:project_id>/rubrics/", views.rubric_list, name="list"),
    path("projects/<int:project_id>/rubrics/new/", views.rubric_new, name="new"),
    path("rubrics/<int:rubric_id>/", views.rubric_detail, name="detail"),
    path("rubrics/<int:rubric_id>/edit/", views.rubric_edit, name="edit"),
    path("rubrics/<int:rubric_id>/delete/", views.rubric_remove, name="delete"),
]
