import pytest
from django.test import Client


@pytest.mark.django_db
def test_healthz_answers_200_when_the_database_answers() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["database"] == "ok"
    assert "redis" in body
