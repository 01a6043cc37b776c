"""Verifier pages (included from webapp/pages/urls.py); names live in the ``verification`` namespace."""

from django.urls import path

from webapp.verification import views

app_name = "verification"

urlpatterns = [
    path("projects/<int:project_id>/verifiers/", views.verifier_list, name="list"),
    path("verifiers/<int:definition_id>/", views.verifier_detail, name="detail"),
    path("verifiers/<int:definition_id>/edit/", views.verifier_edit, name="edit"),
    path("verifiers/<int:definition_id>/cases/", views.case_add, name="case-add"),
    path("verifier-cases/<int:case_id>/delete/", views.case_delete, name="case-delete"),
    path("verifier-versions/<int:version_id>/", views.version_detail, name="version"),
]
