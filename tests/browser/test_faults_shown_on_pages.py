"""Faults as a person sees them: a run the task queue refused, and a locked sign-in, in a real browser."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.workers.helpers import clear_queues, redis_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_a_run_the_queue_refused_shows_why_and_is_queued_again_from_its_page(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    run.status = "not_queued"
    run.error_message = "The task queue (Redis) was unreachable when the run was launched: queue it again."
    run.save(update_fields=["status", "error_message"])
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    button = page.locator("#queue-again")
    assert button.is_visible()
    assert "unreachable" in page.inner_text("body")
    screenshot(page, "01-not-queued")
    try:
        button.click()
        page.wait_for_function("() => document.getElementById('queue-again').style.display === 'none'")
        run.refresh_from_db()
        assert run.status == "queued"
        screenshot(page, "02-queued-again")
    finally:
        clear_queues(redis_url())  # the message went to the real Redis; no worker takes it here
    assert page.js_errors == []


def test_repeated_wrong_passwords_lock_the_sign_in_page_and_say_how_to_get_back_in(
    page: Any, screenshot: Callable[[Any, str], Path]
) -> None:
    seed_run()
    for _ in range(5):
        page.goto("/accounts/login/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "not-her-password")
        page.click("button[type=submit]")
        page.wait_for_load_state()
    page.goto("/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)  # the right one, refused while locked
    page.click("button[type=submit]")
    page.wait_for_load_state()
    text = page.inner_text("body")
    assert "Sign-in locked" in text and "try again in 15 minutes" in text
    assert "/accounts/login/" in page.url  # not signed in
    screenshot(page, "locked-out")
