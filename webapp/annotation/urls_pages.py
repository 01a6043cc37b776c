"""Annotation pages (included from webapp/pages/urls.py)."""

from django.urls import path

from webapp.annotation import views, views_review

app_name = "annotation"

urlpatterns = [
    path("projects/<int:project_id>/annotation/", views.task_list, name="task-list"),
    path(
        "projects/<int:project_id>/annotation/pairs-file/",
        views.task_new_from_pairs_file,
        name="task-new-from-pairs-file",
    ),
    path("runs/<int:run_id>/annotate/new/", views.task_new_from_run, name="task-new"),
    path("evals/<int:eval_run_id>/annotate/new/", views.task_new_from_eval, name="task-new-from-eval"),
    path("annotation/<int:task_id>/", views.task_detail, name="task-detail"),
    path("annotation/<int:task_id>/annotate/", views.annotate, name="annotate"),
    path("annotation/<int:task_id>/reassign/", views.task_reassign, name="task-reassign"),
    path("annotation/<int:task_id>/disagreements/", views_review.disagreements, name="disagreements"),
    path("annotation/<int:task_id>/items/<int:item_id>/", views_review.review_item, name="review-item"),
    path(
        "annotation/<int:task_id>/items/<int:item_id>/adjudicate/", views_review.adjudicate, name="adjudicate"
    ),
    path("annotation/<int:task_id>/annotators/<str:username>/", views_review.annotator, name="annotator"),
    path("annotation/<int:task_id>/score/", views_review.score_items, name="score-items"),
]
