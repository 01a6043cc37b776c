"""The ``studio`` fixture every integration test sends its runs to (tests/integrations/live_studio.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integrations.live_studio import Studio


@pytest.fixture
def studio(
    live_server: Any, transactional_db: None, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Studio]:
    from tests.workers.helpers import make_user
    from webapp.accounts.tokens import issue_token
    from webapp.teams.services import project_create

    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    settings.RLVR_TOKEN_STORE = str(tmp_path / "rollout-tokens")
    alice = make_user("alice")
    project = project_create(name="Lab", owner=alice)
    token = issue_token(alice, name="integration").token
    monkeypatch.setenv("RLVR_URL", live_server.url)
    monkeypatch.setenv("RLVR_TOKEN", token)
    monkeypatch.setenv("RLVR_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("RLVR_PROJECT", project.slug)
    with httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Token {token}"}, timeout=30
    ) as http:
        yield Studio(url=live_server.url, http=http, project=project)
