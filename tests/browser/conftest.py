"""Browser tests: a live daphne serving webapp.asgi against the pytest-django test database, Debian's
chromium driven by Playwright (Python), a signed-in page, and screenshots under .artifacts/screenshots/.

The server is a separate process, so it only sees committed rows: tests use ``transactional_db`` (through
``real_services``) on PostgreSQL. Without /usr/bin/chromium the tests skip, unless RLVR_REQUIRE_SERVICES
is set (CI), where they fail.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from tests.browser.helpers import JUDGE_URL
from tests.workers.conftest import real_services, runs_dir, start_worker  # noqa: F401 -- fixtures, shared
from tests.workers.helpers import REPO, redis_reachable, redis_url, serve_daphne, worker_env

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
SCREENSHOTS = REPO / ".artifacts" / "screenshots"


def _missing(reason: str) -> None:
    (pytest.fail if os.environ.get("RLVR_REQUIRE_SERVICES") else pytest.skip)(reason)


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        _missing(f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture(scope="session")
def live_server_url(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """daphne on a free port, pointed at the test database and test Redis, for the whole session.

    RLVR_DEBUG=1 so whitenoise serves static/ straight from the finders (no collectstatic step). The judge
    endpoint allow-list (RLVR_JUDGE_ENDPOINTS) adds ``helpers.JUDGE_URL`` in this server's environment only."""
    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            _missing("browser tests need DATABASE_URL=postgres://... (daphne must share the test database)")
        if not redis_reachable(redis_url()):
            _missing(f"browser tests need Redis at REDIS_URL ({redis_url()})")
        # RLVR_ENQUEUE=1 whatever the test process has: a run launched from the browser must reach the worker.
        roots = [
            *settings.RLVR_MODEL_ROOTS,
            tmp_path_factory.getbasetemp(),
        ]  # where the test models are built
        env = worker_env(tmp_path_factory.mktemp("web-data"), roots)
        judges = [e for e in env.get("RLVR_JUDGE_ENDPOINTS", "").split(",") if e.strip()]
        env.update(
            {
                "RLVR_DEBUG": "1",
                "RLVR_ENQUEUE": "1",
                "RLVR_JUDGE_ENDPOINTS": ",".join([*judges, JUDGE_URL]),
            }
        )
    with serve_daphne(env, tmp_path_factory.mktemp("daphne") / "daphne.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser(chromium_path: Path) -> Iterator[Any]:
    """Chromium for one test module. Playwright's sync API keeps an asyncio loop in this thread while it
    is open, so Django would refuse the test bodies' ORM calls as "async context": allowed here, and both
    the loop and the permission end with the module, so later (non-browser) tests run as usual."""
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(
                executable_path=str(chromium_path), headless=True, args=CHROMIUM_ARGS
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(
    browser: Any,
    live_server_url: str,
    real_services: None,  # noqa: F811 -- the fixture imported above, by name
    django_db_blocker: Any,
) -> Iterator[Any]:
    """A fresh browser context (no cookies) whose relative URLs resolve against the live server."""
    context = browser.new_context(base_url=live_server_url, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.js_errors = errors  # read by tests that want a clean console
    yield pg
    context.close()
    with django_db_blocker.unblock():
        _wait_for_server_queries()


def _wait_for_server_queries(timeout_s: float = 10.0) -> None:
    """Wait (a bounded time) until no other session of the test database is inside a query or a transaction. A page
    that polled just before its context closed leaves daphne finishing that request; the test database's flush
    (TRUNCATE of every table) then deadlocked with it once (seen under load)."""
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')"
            )
            row = cursor.fetchone()
            if row is None or row[0] == 0:
                return
            time.sleep(0.05)


@pytest.fixture
def sign_in(page: Any) -> Callable[[str, str], Any]:
    """``sign_in(username, password)``: logs in through the /accounts/login/ form; returns the page."""

    def login(username: str, password: str) -> Any:
        page.goto("/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert "/accounts/login/" not in page.url, "sign-in failed"
        return page

    return login


@pytest.fixture
def screenshot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    """``screenshot(page, name)``: a full-page PNG at .artifacts/screenshots/<test>--<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)

    def take(pg: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{test}--{name}.png"
        scrolled = pg.evaluate("() => [window.scrollX, window.scrollY]")
        pg.screenshot(path=str(path), full_page=True, animations="disabled")  # a bar mid-transition misleads
        # Chromium's full-page capture resizes the viewport and leaves the page's scroll offset stale (it reads
        # the clamped end of the page until the next input, which then jumps back): a click right after would
        # press on one element and release on another. Scrolling back explicitly makes both agree again.
        pg.evaluate("([x, y]) => window.scrollTo(x, y)", scrolled)
        return path

    return take
