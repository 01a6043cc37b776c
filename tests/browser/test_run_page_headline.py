"""The run page in a real browser: a run that evaluates greedily on held-out problems (as the demo does) shows
"Greedy accuracy on N held-out problems: first -> latest" above the charts, with its chart, from the first
render and live with each evaluation; a finished run's progress line says neither "live" nor "· ·"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, seed_run
from tests.browser.test_model_build_phase import off_the_page_thread
from webapp.experiments.services import run_finish, run_mark_started, run_record_step

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

KEY = "eval/chain_arithmetic/accuracy (greedy)"
EVALUATED = {
    "name": "browser", "data": {"source": "demo", "size": 32},
    "rollout": {"num_generations": 4, "max_completion_length": 4},
    "training": {"max_steps": 20, "prompts_per_step": 2},
    "evaluation": {"benchmarks": ["builtin:chain_arithmetic"], "eval_at_start": True, "eval_every": 10, "eval_at_end": True},
}  # fmt: skip


def step(run: Any, n: int, metrics: dict[str, float]) -> None:
    off_the_page_thread(
        lambda: run_record_step(run_id=run.pk, step=n, max_steps=20, metrics=metrics, rollouts=[])
    )


def headline(page: Any) -> str:
    return " ".join(str(page.inner_text("#run-headline .headline-text")).split())


def test_the_run_page_heads_with_greedy_accuracy_before_training_and_now(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    run = seed_run(config=EVALUATED)
    run_mark_started(run_id=run.pk, worker="w1")
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.getElementById('live').textContent === 'live'")
    assert headline(page) == (
        "Greedy accuracy on 500 held-out problems (chain_arithmetic): not measured yet "
        "(before training, every 10 steps and at the end)"
    )

    step(run, 0, {KEY: 0.086, "eval/chain_arithmetic/eval_s": 6.0})  # the policy before its first update
    page.wait_for_function(
        "() => document.querySelector('#run-headline .headline-values').textContent.includes('at step 0')"
    )
    assert headline(page).endswith(": 0.086 at step 0")
    # One evaluation is a dot on its chart (a line through a single point draws nothing).
    page.wait_for_function(
        "() => document.querySelectorAll('#run-headline .chart .scatterlayer .points path').length >= 1"
    )
    for n in range(1, 11):
        step(run, n, {"rollout/reward_mean": 0.1, **({KEY: 0.25} if n == 10 else {})})
    page.wait_for_function(
        "() => document.querySelector('#run-headline .headline-values').textContent.includes('→')"
    )
    assert headline(page).endswith(": 0.086 → 0.250 (step 0 → 10)")
    # Its chart heads the page too, not among the eval/ group's charts further down.
    assert page.eval_on_selector_all("#run-headline .chart", "els => els.map(e => e.dataset.key)") == [KEY]
    assert page.query_selector("#group-eval .chart[data-key='" + KEY + "']") is None
    page.reload()  # the first render says the same
    page.wait_for_function("() => document.body.dataset.chartsReady === '1'")
    assert headline(page).endswith(": 0.086 → 0.250 (step 0 → 10)")
    # An evaluation is drawn unsmoothed: its bold line reaches 0.25, it does not lag behind at an average.
    raw, smoothed = page.eval_on_selector(
        "#run-headline .chart",
        "el => { const d = el.querySelector('.js-plotly-plot') || el; return [d.data[2].y, d.data[3].y]; }",
    )
    assert smoothed == raw == [0.086, 0.25]
    screenshot(page, "run-headline")
    assert page.js_errors == []


def test_a_run_without_greedy_evaluation_has_no_headline(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    run = seed_run()
    run_mark_started(run_id=run.pk, worker="w1")
    step(run, 1, {"rollout/reward_mean": 0.5})
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.querySelector('#charts .chart') !== null")
    assert not page.is_visible("#run-headline")


def test_a_finished_run_says_its_last_step_without_live_or_a_doubled_separator(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    run = seed_run()
    run_mark_started(run_id=run.pk, worker="w1")
    step(run, 20, {"rollout/reward_mean": 0.5, "perf/step_s": 0.4})
    off_the_page_thread(lambda: run_finish(run_id=run.pk, status="succeeded", final_metrics={}))
    sign_in("alice", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_function("() => document.body.dataset.chartsReady === '1'")
    page.wait_for_timeout(500)  # the websocket's hello has come and gone
    assert page.eval_on_selector("#step-text", "e => e.parentElement.innerText").strip() == "step 20 / 20"
