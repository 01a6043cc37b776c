"""Websocket URLs (webapp/asgi.py mounts them under the session + token auth stack)."""

from __future__ import annotations

from django.urls import path, re_path

from webapp.benchmarks.consumers import EvalConsumer
from webapp.realtime.consumers import RunConsumer, UnknownPathConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/evals/<int:eval_run_id>/", EvalConsumer.as_asgi()),
    re_path(r"", UnknownPathConsumer.as_asgi()),  # last: any other path is closed with 4404, not an HTTP 500
]
