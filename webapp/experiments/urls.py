from django.urls import path

from webapp.experiments import api_configs, api_experiments, api_run_data, api_runs

urlpatterns = [
    path("config-schema/", api_experiments.ConfigSchemaApi.as_view(), name="config-schema"),
    path("configs/parse/", api_configs.ConfigParseApi.as_view(), name="config-parse"),
    path("configs/yaml/", api_configs.ConfigYamlApi.as_view(), name="config-yaml"),
    path(
        "projects/<int:project_id>/experiments/",
        api_experiments.ExperimentListApi.as_view(),
        name="experiment-list",
    ),
    path("projects/<int:project_id>/runs/", api_runs.ProjectRunListApi.as_view(), name="project-run-list"),
    path(
        "experiments/<int:experiment_id>/",
        api_experiments.ExperimentDetailApi.as_view(),
        name="experiment-detail",
    ),
    path(
        "experiments/<int:experiment_id>/runs/",
        api_runs.ExperimentRunListApi.as_view(),
        name="experiment-run-list",
    ),
    path("runs/", api_runs.RunListApi.as_view(), name="run-list"),
    path("runs/<int:run_id>/", api_runs.RunDetailApi.as_view(), name="run-detail"),
    path("runs/<int:run_id>/cancel/", api_runs.RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<int:run_id>/resume/", api_runs.RunResumeApi.as_view(), name="run-resume"),
    path("runs/<int:run_id>/queue/", api_runs.RunQueueApi.as_view(), name="run-queue"),
    path("runs/<int:run_id>/retention/", api_runs.RunRetentionApi.as_view(), name="run-retention"),
    path("runs/<int:run_id>/metrics/", api_run_data.RunMetricsApi.as_view(), name="run-metrics"),
    path("runs/<int:run_id>/rollouts/", api_run_data.RunRolloutListApi.as_view(), name="run-rollout-list"),
    path(
        "runs/<int:run_id>/rollouts/<int:rollout_id>/",
        api_run_data.RunRolloutDetailApi.as_view(),
        name="run-rollout-detail",
    ),
    path(
        "runs/<int:run_id>/checkpoints/",
        api_run_data.RunCheckpointListApi.as_view(),
        name="run-checkpoint-list",
    ),
    path("runs/<int:run_id>/events/", api_run_data.RunEventListApi.as_view(), name="run-event-list"),
]
