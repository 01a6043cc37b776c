from django.urls import path

from webapp.annotation import api

urlpatterns = [
    path("projects/<int:project_id>/annotation-tasks/", api.ProjectTaskListApi.as_view(), name="annotation-task-list"),
    path("annotation-tasks/<int:task_id>/", api.TaskDetailApi.as_view(), name="annotation-task-detail"),
    path("annotation-tasks/<int:task_id>/queue/", api.TaskQueueApi.as_view(), name="annotation-task-queue"),
    path("annotation-tasks/<int:task_id>/progress/", api.TaskProgressApi.as_view(), name="annotation-task-progress"),
    path("annotation-tasks/<int:task_id>/agreement/", api.TaskAgreementApi.as_view(), name="annotation-task-agreement"),
    path("annotation-tasks/<int:task_id>/reassign/", api.TaskReassignApi.as_view(), name="annotation-task-reassign"),
    *(
        path(f"annotation-tasks/<int:task_id>/export.{fmt}", api.TaskExportApi.as_view(), {"fmt": fmt},
             name=f"annotation-task-export-{fmt}")
        for fmt in ("jsonl", "csv")
    ),
    path("annotation-assignments/<int:assignment_id>/", api.AssignmentDetailApi.as_view(), name="annotation-assignment"),
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
