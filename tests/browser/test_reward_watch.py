"""The run page's "Learned reward vs verifier" panel in a real browser: a watched run's learned reward, its weight-0
verifier, actor/kl and actor/entropy on one chart from the stored metrics, and the reward-hacking flag with its step,
both from the first render and live as the steps and the warning arrive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.browser.test_model_build_phase import off_the_page_thread
from webapp.experiments.services import run_log_event, run_mark_started, run_record_step

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

WATCHED = {
    "name": "browser", "data": {"source": "demo", "size": 32},
    "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 20, "prompts_per_step": 2},
    "verifiers": [{"name": "regex_format", "label": "rm", "params": {"pattern": "[0-9]"}}, {"name": "chain_arithmetic"}],
    "algorithm": {"reward_weights": [1.0, 0.0], "beta": 0.04},
    "reward_watch": {"learned": "rm", "window": 3},
}  # fmt: skip
MESSAGE = (
    "Reward hacking suspected at step 4: reward/rm_mean rose +0.20 over steps 2-4 while the verifier's accuracy "
    "(reward/chain_arithmetic_mean) fell -0.20"
)


def step(run: Any, n: int) -> None:
    drift = 0.1 * max(0, n - 2)
    metrics = {
        "reward/rm_mean": 0.3 + drift, "reward/chain_arithmetic_mean": 0.5 - drift, "actor/kl": 0.01 * n,
        "actor/entropy": 1.0 - 0.05 * n, "watch/hacking": 1.0 if n >= 4 else 0.0, "rollout/reward_mean": 0.3 + drift,
    }  # fmt: skip
    off_the_page_thread(
        lambda: run_record_step(run_id=run.pk, step=n, max_steps=20, metrics=metrics, rollouts=[])
    )


def flag_warning(run: Any) -> None:
    off_the_page_thread(
        lambda: run_log_event(run_id=run.pk, level="warning", kind="reward_hacking", step=4, message=MESSAGE)
    )


def chart_traces(page: Any) -> dict[str, list[float]]:
    return dict(
        page.eval_on_selector("#reward-watch-chart", "el => el.data.map(t => [t.name.split(' ')[0], t.y])")
    )


def test_the_panel_plots_stored_metrics_and_shows_the_flag(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run(config=WATCHED)
    run_mark_started(run_id=run.pk, worker="w1")
    for n in range(1, 7):
        step(run, n)
    flag_warning(run)
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.body.dataset.chartsReady === '1'")
    page.wait_for_function("() => document.getElementById('reward-watch-chart').dataset.points === '6'")
    traces = chart_traces(page)
    assert list(traces) == ["reward/rm_mean", "reward/chain_arithmetic_mean", "actor/kl", "actor/entropy"]
    assert traces["reward/rm_mean"] == pytest.approx([0.3, 0.3, 0.4, 0.5, 0.6, 0.7])
    assert traces["reward/chain_arithmetic_mean"] == pytest.approx([0.5, 0.5, 0.4, 0.3, 0.2, 0.1])
    assert page.is_visible("#reward-watch-flag")
    assert page.inner_text("#reward-watch-step") == "4"
    assert page.inner_text("#reward-watch-message") == MESSAGE
    screenshot(page, "reward-watch")
    assert page.js_errors == []


def test_the_flag_appears_live_when_the_watch_fires(page: Any, sign_in: Callable[[str, str], Any]) -> None:
    run = seed_run(config=WATCHED)
    run_mark_started(run_id=run.pk, worker="w1")
    for n in range(1, 4):
        step(run, n)
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('live').textContent === 'live'")
    page.wait_for_function("() => document.getElementById('reward-watch-chart').dataset.points === '3'")
    assert not page.is_visible("#reward-watch-flag")

    step(run, 4)
    flag_warning(run)
    page.wait_for_function("() => document.getElementById('reward-watch-message').textContent.length > 0")
    assert page.is_visible("#reward-watch-flag")
    assert page.inner_text("#reward-watch-step") == "4"
    assert page.inner_text("#reward-watch-message") == MESSAGE
    page.wait_for_function("() => document.getElementById('reward-watch-chart').dataset.points === '4'")
    assert page.js_errors == []


def test_a_run_without_a_watch_has_no_panel(page: Any, sign_in: Callable[[str, str], Any]) -> None:
    run = seed_run()
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.body.dataset.chartsReady === '1'")
    assert page.query_selector("#reward-watch") is None
    assert page.js_errors == []
