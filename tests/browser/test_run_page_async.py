"""An asynchronous run's page in a real browser: its async/ charts form their own group, and the latest
staleness and both sides' idle time show beside the step count, on load and live with each step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.browser.test_model_build_phase import off_the_page_thread
from webapp.experiments.services import run_mark_started, run_record_step

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def step(run: Any, n: int, staleness: float, trainer_idle: float, generator_idle: float) -> None:
    metrics = {
        "rollout/reward_mean": 0.1 * n,
        "async/staleness": staleness,
        "async/trainer_idle_s": trainer_idle,
        "async/generator_idle_s": generator_idle,
        "async/is_weight_mean": 0.98,
    }
    off_the_page_thread(
        lambda: run_record_step(run_id=run.pk, step=n, max_steps=run.max_steps, metrics=metrics, rollouts=[])
    )


def test_the_run_page_shows_staleness_and_idle_times_of_an_async_run(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run()
    run_mark_started(run_id=run.pk, worker="w1")
    step(run, 1, 0, 0.41, 0.0)
    step(run, 2, 1, 0.12, 0.05)
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('live').textContent === 'live'")
    page.wait_for_function("() => document.getElementById('async-part').style.display === ''")
    assert (
        page.inner_text("#live-part + #async-part").strip()
        == "· staleness 1 step · trainer idle 0.12 s · generator idle 0.05 s"
    )
    assert (
        page.text_content("#async-summary")
        == "staleness 1 step · trainer idle 0.12 s · generator idle 0.05 s"
    )
    charts = page.eval_on_selector_all("#group-async .chart", "els => els.map(e => e.dataset.key)")
    assert set(charts) == {
        "async/staleness",
        "async/trainer_idle_s",
        "async/generator_idle_s",
        "async/is_weight_mean",
    }

    step(run, 3, 2, 0.0, 1.5)  # live: the run.step event updates it
    page.wait_for_function(
        "() => document.getElementById('async-summary').textContent.startsWith('staleness 2 steps')"
    )
    assert (
        page.text_content("#async-summary")
        == "staleness 2 steps · trainer idle 0.00 s · generator idle 1.50 s"
    )
    screenshot(page, "async-run")
    assert page.js_errors == []


def test_a_synchronous_run_shows_no_async_summary(page: Any, sign_in: Callable[[str, str], Any]) -> None:
    run = seed_run()
    run_mark_started(run_id=run.pk, worker="w1")
    off_the_page_thread(
        lambda: run_record_step(
            run_id=run.pk, step=1, max_steps=run.max_steps, metrics={"rollout/reward_mean": 0.5}, rollouts=[]
        )
    )
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.querySelector('#charts .chart') !== null")
    assert not page.is_visible("#async-part")
