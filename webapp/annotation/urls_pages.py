"""Annotation pages (included from webapp/pages/urls.py)."""

from django.urls import path

from webapp.annotation import views

app_name = "annotation"

urlpatterns = [
    path("projects/<int:project_id>/annotation/", views.task_list, name="task-list"),
    path("runs/<int:run_id>/annotate/new/", views.task_new_from_run, name="task-new"),
    path("evals/<int:eval_run_id>/annotate/new/", views.task_new_from_eval, name="task-new-from-eval"),
    path("annotation/<int:task_id>/", views.task_detail, name="task-detail"),
    path("annotation/<int:task_id>/annotate/", views.annotate, name="annotate"),
    path("annotation/<int:task_id>/reassign/", views.task_reassign, name="task-reassign"),
]
