"""``/healthz``: 200 only when every dependency answers; otherwise 503 naming the one that failed."""

from __future__ import annotations

import pytest
from django.test import Client
from pytest_django import Settings

from webapp.stack import free_port

pytestmark = pytest.mark.django_db


def test_healthz_answers_200_when_the_database_and_redis_answer() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200, response.json()
    assert response.json() == {"status": "ok", "database": "ok", "redis": "ok"}


def test_healthz_answers_503_naming_redis_when_redis_is_down(settings: Settings) -> None:
    port = free_port()  # nothing listens there
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unhealthy" and body["database"] == "ok"
    assert body["redis"].startswith("down: ConnectionError") and f"127.0.0.1:{port}" in body["redis"]


def test_a_separate_channel_layer_redis_that_is_down_is_named_too(settings: Settings) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [dead]}}
    }
    response = Client().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["redis"] == "ok" and body["channel_layer"].startswith("down: ConnectionError")
