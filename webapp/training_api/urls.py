"""``/tinker/api/v1/<call>``: the Tinker SDK appends ``/api/v1/...`` to its ``base_url`` (``.../tinker``)."""

from django.urls import re_path

from webapp.training_api.views import retrieve_future_async, tinker_call

app_name = "training_api"
urlpatterns = [
    re_path(r"^api/v1/retrieve_future$", retrieve_future_async, name="retrieve-future"),
    re_path(r"^api/v1/(?P<name>[A-Za-z0-9_/.:-]{1,200})$", tinker_call, name="call"),
]
