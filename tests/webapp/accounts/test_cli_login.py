"""``rlvr login / runs / logout`` against the real API (Django's WSGI handler in this process, test DB)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from rlvr_client import client
from webapp.accounts.models import ApiToken
from webapp.accounts.tokens import digest_of
from webapp.teams.models import Project

URL = "http://testserver"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """``client.main`` talks to this process's Django; credentials go under ``tmp_path``. Like Django's
    test client, requests keep the test's database connection (its transaction) open."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(client, "Api", partial(client.Api, transport=httpx.WSGITransport(app=WSGIHandler())))
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield tmp_path / "rlvr-studio" / "credentials.json"
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def stored(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_login_stores_a_token_the_server_keeps_only_hashed(cli: Path, alice: User, capsys: Any) -> None:
    assert client.main(["login", "--url", URL, "--username", "alice", "--password", "pw-alice-123"]) == 0
    token = stored(cli)["token"]
    record = ApiToken.objects.get(user=alice)
    assert (record.digest, record.name.startswith("rlvr CLI on ")) == (digest_of(token), True)
    assert "valid until" in capsys.readouterr().out


def test_the_stored_token_lists_runs(cli: Path, project: Project, alice: User, capsys: Any) -> None:
    client.main(["login", "--url", URL, "--username", "alice", "--password", "pw-alice-123"])
    assert client.main(["runs"]) == 0
    assert "no runs" in capsys.readouterr().out


def test_logout_revokes_the_token_on_the_server(cli: Path, alice: User) -> None:
    client.main(["login", "--url", URL, "--username", "alice", "--password", "pw-alice-123"])
    assert client.main(["logout"]) == 0
    assert not cli.exists()
    assert ApiToken.objects.get(user=alice).revoked_at is not None


def test_a_locked_account_tells_the_cli_user_how_to_unlock(cli: Path, alice: User, capsys: Any) -> None:
    for i in range(5):
        client.main(["login", "--url", URL, "--username", "alice", "--password", f"wrong-{i}"])
    assert client.main(["login", "--url", URL, "--username", "alice", "--password", "pw-alice-123"]) == 2
    assert "Too many failed sign-ins for this username" in capsys.readouterr().err
    assert not cli.exists()
