"""``GET /api/``: the address the README and the stack banner print answers with the API's index."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.urls import Resolver404, resolve
from rest_framework.test import APIClient

from webapp.api.index import MAIN_ENDPOINTS


def test_an_anonymous_client_gets_the_index_with_links_to_the_docs_and_the_schema(db: None) -> None:
    response = APIClient().get("/api/")
    assert response.status_code == 200
    body = response.json()
    assert (body["docs"], body["schema"], body["authenticated"]) == ("/api/docs/", "/api/schema/", False)
    assert body["endpoints"]["runs"]["path"] == "/api/runs/"


def test_a_signed_in_user_gets_the_same_index(alice: User) -> None:
    client = APIClient()
    client.force_authenticate(alice)
    body = client.get("/api/").json()
    assert body["authenticated"] is True
    assert set(body["endpoints"]) == set(MAIN_ENDPOINTS)


def test_a_bad_token_is_refused_in_the_api_error_shape(db: None) -> None:
    response = APIClient().get("/api/", HTTP_AUTHORIZATION="Token not-a-token")
    assert response.status_code == 401
    assert set(response.json()) == {"message", "extra"}


@pytest.mark.parametrize("name", sorted(MAIN_ENDPOINTS))
def test_every_listed_endpoint_is_a_route(name: str) -> None:
    path = re.sub(r"<id>", "1", MAIN_ENDPOINTS[name][0])
    try:
        resolve(path)
    except Resolver404:
        pytest.fail(f"{name}: {path} is not a route")
