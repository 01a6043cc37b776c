"""The core pages: projects, members, experiments, runs and the run comparison."""

from django.urls import path

from webapp.pages import views_compare, views_experiments, views_projects, views_runs, views_runs_table

app_name = "ui"  # a namespace of its own: the API already uses names like "project-detail"

urlpatterns = [
    path("", views_projects.project_list, name="project-list"),
    path("projects/<int:project_id>/", views_projects.project_detail, name="project-detail"),
    path("projects/<int:project_id>/members/", views_projects.member_add, name="member-add"),
    path(
        "projects/<int:project_id>/members/<str:username>/",
        views_projects.member_change,
        name="member-change",
    ),
    path(
        "projects/<int:project_id>/experiments/new/", views_experiments.experiment_new, name="experiment-new"
    ),
    path("projects/<int:project_id>/compare/", views_compare.compare, name="compare"),
    path("projects/<int:project_id>/runs/", views_runs_table.runs_table, name="runs-table"),
    path("experiments/<int:experiment_id>/", views_experiments.experiment_detail, name="experiment-detail"),
    path("experiments/<int:experiment_id>/edit/", views_experiments.experiment_edit, name="experiment-edit"),
    path(
        "experiments/<int:experiment_id>/clone/", views_experiments.experiment_clone, name="experiment-clone"
    ),
    path(
        "experiments/<int:experiment_id>/launch/",
        views_experiments.experiment_launch,
        name="experiment-launch",
    ),
    path("runs/<int:run_id>/", views_runs.run_detail, name="run-detail"),
    path("runs/<int:run_id>/cancel/", views_runs.run_action, {"action": "cancel"}, name="run-cancel"),
    path("runs/<int:run_id>/resume/", views_runs.run_action, {"action": "resume"}, name="run-resume"),
]
