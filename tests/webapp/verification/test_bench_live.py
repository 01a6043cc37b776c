"""The real server (daphne, one process) keeps serving while a slow bench verdict runs.

A sync Django view runs in a thread of its own under daphne, but a verdict computed in that thread holds
the GIL while it is inside C code (a regular-expression match), so before the bench scored out of process
every other request waited for it: ``/healthz`` answered only after the verdict. The slow verdict here is
real: the last match of ``a.*z|a`` in 100,000 ``a``s (100,000 matches, each reading to the end: about 8 s
in RE2, far longer with Python's ``re``). The bench's budget is 2 s in this server (bench_live_settings.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.webapp.helpers import make_user
from tests.workers.conftest import real_services, runs_dir  # noqa: F401 -- fixtures, shared
from tests.workers.helpers import serve_daphne, worker_env
from webapp.teams.services import project_create
from webapp.verification.services import verifier_definition_create

SLOW = {"extract": "regex", "pattern": "a.*z|a"}
SLOW_TEXT = "a" * 100_000
BUDGET_S = 2


@pytest.fixture
def daphne_url(real_services: None, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    env = {
        **worker_env(tmp_path / "data"),
        "DJANGO_SETTINGS_MODULE": "tests.webapp.verification.bench_live_settings",
    }
    with serve_daphne(env, tmp_path / "daphne.log") as url:
        yield url


@pytest.mark.slow
def test_other_requests_are_answered_while_a_slow_bench_verdict_runs(daphne_url: str) -> None:
    alice = make_user("alice")
    project = project_create(name="Lab", owner=alice, description="")
    definition = verifier_definition_create(
        project=project, actor=alice, name="v", verifier="exact", params=SLOW
    )
    bench = f"{daphne_url}/api/verifier-versions/{definition.versions.get(number=1).pk}/test/"
    token = httpx.post(
        f"{daphne_url}/api/auth/token/", json={"username": "alice", "password": "pw-alice-123"}
    )
    assert token.status_code == 200, token.text
    headers = {"Authorization": f"Token {token.json()['token']}"}
    assert httpx.post(bench, json={"completion": "a", "reference": "a"}, headers=headers, timeout=30).json()[
        "correct"
    ]

    slow: dict[str, Any] = {}

    def run_slow() -> None:
        started = time.monotonic()
        response = httpx.post(
            bench, json={"completion": SLOW_TEXT, "reference": "a"}, headers=headers, timeout=60
        )
        slow.update(seconds=time.monotonic() - started, verdict=response.json())

    thread = threading.Thread(target=run_slow)
    thread.start()
    time.sleep(0.5)  # the slow verdict is being computed now
    started = time.monotonic()
    health = httpx.get(f"{daphne_url}/healthz", timeout=30)
    page = httpx.get(f"{daphne_url}/api/verifiers/{definition.pk}/", headers=headers, timeout=30)
    others_s = time.monotonic() - started
    thread.join(timeout=60)

    assert health.status_code == 200 and page.status_code == 200
    assert others_s < 1.0, f"other requests waited {others_s:.1f} s behind the bench"
    assert "seconds" in slow and slow["seconds"] < BUDGET_S + 3
    assert slow["verdict"]["error"].startswith(f"verifier exceeded its {BUDGET_S} s budget")
