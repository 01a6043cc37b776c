"""A run building its model before step 1, in a real browser: the run page shows the build (label, bar,
time left) instead of "step 0 / N · ETA —" from its first render, follows each run.phase event live, and
goes back to steps with the first one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.browser.helpers import PASSWORD, seed_run
from webapp.experiments.services import run_mark_started, run_record_phase, run_record_step

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LABEL = "Building the built-in model tiny:addition (warm-start SFT, once)"


def off_the_page_thread(write: Callable[[], None]) -> None:
    """Run a service as the worker would: Playwright keeps an asyncio loop in the test's thread, where the
    publish helper's async_to_sync refuses to run, so the event would never reach the page."""

    def work() -> None:
        try:
            write()
        finally:
            connection.close()  # this thread's own connection, or the test database cannot be dropped

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def building(run: Any, done: int, eta_s: float) -> None:
    off_the_page_thread(
        lambda: run_record_phase(
            run_id=run.pk,
            name="building_model",
            label=LABEL,
            subject="tiny:addition",
            done=done,
            total=1200,
            elapsed_s=done * 0.2,
            eta_s=eta_s,
        )
    )


def text(page: Any, element_id: str) -> str:
    return str(page.text_content(f"#{element_id}")).strip()


def test_the_run_page_shows_the_model_build_and_follows_it_live(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    run_mark_started(run_id=run.pk, worker="w1")
    building(run, 300, 180.0)
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('live').textContent === 'live'")

    assert page.is_visible("#run-phase") and text(page, "phase-label") == LABEL
    assert text(page, "phase-count") == "300 / 1200 steps"
    assert text(page, "phase-eta") == "about 3m 0s left"
    assert page.get_attribute("#phase-progress", "aria-valuenow") == "300"
    assert not page.is_visible("#step-progress") and not page.is_visible("#step-text")
    screenshot(page, "01-building")

    building(run, 900, 30.0)
    page.wait_for_function("() => document.getElementById('phase-count').textContent === '900 / 1200 steps'")
    assert text(page, "phase-eta") == "about 30s left"
    assert page.evaluate("document.getElementById('phase-bar').style.width") == "75%"
    page.wait_for_function("() => document.querySelector('#events').textContent.includes('1200 steps')")

    building(run, 1200, 0.0)
    page.wait_for_function("() => document.getElementById('phase-eta').textContent === 'done, loading'")
    assert "Built tiny:addition in 240 s." in str(page.text_content("#events"))
    screenshot(page, "02-built")

    off_the_page_thread(
        lambda: run_record_step(
            run_id=run.pk,
            step=1,
            max_steps=run.max_steps,
            metrics={"rollout/reward_mean": 0.5},
            rollouts=[],
        )
    )
    page.wait_for_function("() => document.getElementById('run-phase').style.display === 'none'")
    assert page.is_visible("#step-progress") and text(page, "progress-text") == f"step 1 / {run.max_steps}"
    assert page.js_errors == []
