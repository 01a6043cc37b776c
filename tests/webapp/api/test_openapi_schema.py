from __future__ import annotations

import re
from typing import Any

from django.test import Client


def test_the_openapi_schema_generates_and_lists_the_runs_api(client: Client, db: None) -> None:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/runs/" in paths
    assert "/api/runs/{run_id}/rollouts/{rollout_id}/" in paths
    assert set(paths["/api/runs/"]) >= {"get", "post"}


def test_the_schema_generates_without_warnings(capsys: Any, db: None) -> None:
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")
    assert "Warning" not in capsys.readouterr().err


def test_the_docs_page_lists_operations_and_loads_nothing_from_a_cdn(client: Client, db: None) -> None:
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/api/runs/{run_id}/cancel/" in html
    assert not re.search(r"""(src|href)=["']https?://""", html)
