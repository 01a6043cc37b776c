from django.urls import path

from webapp.datafiles import api

urlpatterns = [
    path("projects/<int:project_id>/datasets/", api.DatasetListApi.as_view(), name="dataset-list"),
    path(
        "projects/<int:project_id>/datasets/preview/", api.DatasetPreviewApi.as_view(), name="dataset-preview"
    ),
    path("datasets/<int:dataset_id>/", api.DatasetDetailApi.as_view(), name="dataset-detail"),
]
