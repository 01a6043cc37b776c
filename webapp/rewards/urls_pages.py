"""Reward model pages (included from webapp/pages/urls.py); names live in the ``rewards`` namespace.

Training and evaluation pages are listed in their own modules and joined here."""

from django.urls import URLPattern, path

from webapp.rewards import urls_pages_evaluation, urls_pages_training, views

app_name = "rewards"

urlpatterns: list[URLPattern] = [
    path("projects/<int:project_id>/reward-models/", views.reward_model_list, name="list"),
    path("reward-models/<int:reward_model_id>/", views.reward_model_detail, name="detail"),
    path("reward-model-versions/<int:version_id>/", views.version_detail, name="version"),
    path("projects/<int:project_id>/secrets/", views.secret_list, name="secrets"),
    path("projects/<int:project_id>/secrets/<str:name>/delete/", views.secret_delete, name="secret-delete"),
    *urls_pages_training.urlpatterns,
    *urls_pages_evaluation.urlpatterns,
]
