from django.urls import path

from webapp.annotation import api, api_pairwise

urlpatterns = [
    path(
        "projects/<int:project_id>/annotation-tasks/",
        api.ProjectTaskListApi.as_view(),
        name="annotation-task-list",
    ),
    path("annotation-tasks/<int:task_id>/", api.TaskDetailApi.as_view(), name="annotation-task-detail"),
    path("annotation-tasks/<int:task_id>/queue/", api.TaskQueueApi.as_view(), name="annotation-task-queue"),
    path(
        "annotation-tasks/<int:task_id>/progress/",
        api.TaskProgressApi.as_view(),
        name="annotation-task-progress",
    ),
    path(
        "annotation-tasks/<int:task_id>/agreement/",
        api.TaskAgreementApi.as_view(),
        name="annotation-task-agreement",
    ),
    path(
        "annotation-tasks/<int:task_id>/reassign/",
        api.TaskReassignApi.as_view(),
        name="annotation-task-reassign",
    ),
    path(
        "annotation-tasks/<int:task_id>/disagreements/",
        api.TaskDisagreementsApi.as_view(),
        name="annotation-task-disagreements",
    ),
    path(
        "annotation-tasks/<int:task_id>/machine-scorers/",
        api.TaskMachineScorersApi.as_view(),
        name="annotation-task-machine-scorers",
    ),
    path(
        "annotation-tasks/<int:task_id>/machine-agreement/",
        api.TaskMachineAgreementApi.as_view(),
        name="annotation-task-machine-agreement",
    ),
    path(
        "annotation-tasks/<int:task_id>/scoring-jobs/",
        api.TaskScoringJobsApi.as_view(),
        name="annotation-task-scoring-jobs",
    ),
    path(
        "annotation-scoring-jobs/<int:job_id>/",
        api.ScoringJobDetailApi.as_view(),
        name="annotation-scoring-job",
    ),
    path(
        "annotation-items/<int:item_id>/review/", api.ItemReviewApi.as_view(), name="annotation-item-review"
    ),
    path(
        "annotation-items/<int:item_id>/adjudication/",
        api.ItemAdjudicationApi.as_view(),
        name="annotation-item-adjudication",
    ),
    *(
        path(
            f"annotation-tasks/<int:task_id>/export.{fmt}",
            api.TaskExportApi.as_view(),
            {"fmt": fmt},
            name=f"annotation-task-export-{fmt}",
        )
        for fmt in ("jsonl", "csv")
    ),
    path(
        "annotation-tasks/<int:task_id>/preferences.jsonl",
        api_pairwise.TaskPreferencesExportApi.as_view(),
        name="annotation-task-preferences",
    ),
    path(
        "annotation-assignments/<int:assignment_id>/",
        api.AssignmentDetailApi.as_view(),
        name="annotation-assignment",
    ),
    path(
        "annotation-assignments/<int:assignment_id>/submit/",
        api.AssignmentSubmitApi.as_view(),
        name="annotation-assignment-submit",
    ),
    path(
        "annotation-assignments/<int:assignment_id>/skip/",
        api.AssignmentSkipApi.as_view(),
        name="annotation-assignment-skip",
    ),
]
