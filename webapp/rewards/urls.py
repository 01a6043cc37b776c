"""/api/ routes of reward models, their versions and the project's secrets (included from webapp/api/urls.py)."""

from django.urls import path

from webapp.rewards import api

urlpatterns = [
    path(
        "projects/<int:project_id>/reward-models/", api.RewardModelListApi.as_view(), name="reward-model-list"
    ),
    path(
        "projects/<int:project_id>/reward-model-versions/",
        api.ProjectVersionListApi.as_view(),
        name="project-reward-model-versions",
    ),
    path(
        "reward-models/<int:reward_model_id>/", api.RewardModelDetailApi.as_view(), name="reward-model-detail"
    ),
    path(
        "reward-models/<int:reward_model_id>/versions/",
        api.VersionListApi.as_view(),
        name="reward-model-version-list",
    ),
    path(
        "reward-model-versions/<int:version_id>/",
        api.VersionDetailApi.as_view(),
        name="reward-model-version-detail",
    ),
    path("projects/<int:project_id>/secrets/", api.SecretListApi.as_view(), name="project-secret-list"),
    # Any text up to the next '/': the service checks the name and its message never repeats one that looks like a key.
    path(
        "projects/<int:project_id>/secrets/<str:name>/",
        api.SecretDetailApi.as_view(),
        name="project-secret-detail",
    ),
]
