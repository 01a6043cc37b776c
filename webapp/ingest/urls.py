from django.urls import path

from webapp.ingest.api import IngestBatchApi

urlpatterns = [
    path("ingest/batches/", IngestBatchApi.as_view(), name="ingest-batches"),
]
