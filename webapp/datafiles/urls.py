from django.urls import path

from webapp.datafiles import api

urlpatterns = [
    path("projects/<int:project_id>/datasets/", api.DatasetListApi.as_view(), name="dataset-list"),
]
