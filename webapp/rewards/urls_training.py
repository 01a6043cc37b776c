"""/api/ routes: urls_training (included from webapp/api/urls.py): start a reward-model training job, and read or
cancel any reward job (training or evaluation)."""

from django.urls import URLPattern, path

from webapp.rewards import training_api

urlpatterns: list[URLPattern] = [
    path(
        "projects/<int:project_id>/reward-models/<int:reward_model_id>/train/",
        training_api.TrainApi.as_view(),
        name="reward-model-train",
    ),
    path("reward-jobs/<int:job_id>/", training_api.RewardJobDetailApi.as_view(), name="reward-job-detail"),
    path(
        "reward-jobs/<int:job_id>/cancel/",
        training_api.RewardJobCancelApi.as_view(),
        name="reward-job-cancel",
    ),
]
