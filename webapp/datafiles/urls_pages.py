"""Dataset pages, in the ``datasets`` namespace (included by webapp/pages/urls.py)."""

from django.urls import path

from webapp.datafiles import views

app_name = "datasets"

urlpatterns = [
    path("projects/<int:project_id>/datasets/", views.dataset_list, name="list"),
    path("datasets/<int:dataset_id>/delete/", views.dataset_delete_view, name="delete"),
]
