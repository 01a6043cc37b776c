"""The whole product in a browser, with a real Celery worker training the tiny model: sign in, create an
experiment from the generated form (a server-side validation error first), launch, watch the run page's
chart gain points without a reload, inspect tokens in the rollout browser, then compare two runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import CeleryWorker, make_project, make_user, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

VERIFIERS: list[dict[str, Any]] = [
    {"name": "regex_format", "params": {"pattern": "[0-9]", "match": "search"}}
]


def fill_experiment_form(page: Any, model_dir: Path, max_steps: int) -> None:
    page.fill("input[name=name]", "digits")
    page.evaluate("document.querySelectorAll('#experiment-form details').forEach(d => d.open = true)")
    fields = {
        "model.name_or_path": str(model_dir), "data.size": "64", "rollout.num_generations": "4",
        "rollout.max_completion_length": "4", "training.max_steps": str(max_steps),
        "training.prompts_per_step": "2", "training.micro_batch_size": "8", "training.learning_rate": "0.001",
    }  # fmt: skip
    for path, value in fields.items():
        page.fill(f"[data-path='{path}']", value)
    (verifier,) = VERIFIERS  # through the verifier editor's first row
    page.select_option("#ed-verifiers-0-name", verifier["name"])
    page.fill("#ed-verifiers-0-params-pattern", verifier["params"]["pattern"])
    page.select_option("#ed-verifiers-0-params-match", label=verifier["params"]["match"])


def chart_points(page: Any) -> int:
    return int(page.evaluate(
        "() => Math.max(0, ...[...document.querySelectorAll('#charts .chart')].map(d => (d.data && d.data[0] ? d.data[0].x.length : 0)))"
    ))  # fmt: skip


def test_sign_in_create_launch_watch_inspect_tokens_and_compare(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    start_worker: Callable[[str], CeleryWorker],
    random_model_dir: Path,
) -> None:
    from webapp.experiments.models import Run

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    worker = start_worker("browser@%h")
    sign_in("alice", PASSWORD)
    screenshot(page, "01-projects")

    page.goto(f"/projects/{project.pk}/")
    screenshot(page, "02-project")
    page.goto(f"/projects/{project.pk}/experiments/new/")
    fill_experiment_form(page, random_model_dir, max_steps=0)
    page.click("#experiment-form button[type=submit]")
    error = page.locator("#experiment-form p.error[data-error-for$='max_steps']:not([hidden])")
    error.wait_for()
    assert error.inner_text().strip(), "the server's validation error is shown next to its field"
    error.scroll_into_view_if_needed()
    screenshot(page, "03-form-error")

    page.fill("[data-path='training.max_steps']", "8")
    page.click("#experiment-form button[type=submit]")
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    screenshot(page, "04-experiment")

    page.click("button:has-text('Launch run')")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    first = Run.objects.latest("id")
    page.wait_for_function("() => document.querySelectorAll('#charts .chart').length > 0", timeout=60_000)
    seen = chart_points(page)
    page.wait_for_function(
        f"() => [...document.querySelectorAll('#charts .chart')].some(d => d.data && d.data[0] && d.data[0].x.length > {seen})",
        timeout=60_000,
    )  # new points arrived over the websocket; the page was never reloaded
    wait_for(lambda: Run.objects.get(pk=first.pk).status == "succeeded", 90, "the first run", worker)
    page.wait_for_function(
        "() => document.querySelector('#progress-text').textContent.includes('8 / 8')", timeout=30_000
    )
    screenshot(page, "05-run")

    page.goto(f"/runs/{first.pk}/rollouts/")
    page.wait_for_selector("body[data-rows-ready='1']")
    assert page.locator("#rb-table tbody tr").count() == 8  # 2 prompts x 4 completions at the last step
    page.locator(".rb-prompt-btn").first.click()
    page.wait_for_selector(".rb-card >> nth=3")
    page.locator("#rb-group .rb-tokens-btn").first.click()
    page.wait_for_selector("#tv-tokens[data-ready='1']")
    page.select_option("#tv-channel", "logprob")
    page.hover("#tv-tokens .tok >> nth=0")
    page.wait_for_selector(".tv-tip:not([hidden]) tr[data-key='logprob'][data-value]")
    screenshot(page, "06-rollouts")

    page.goto(f"/experiments/{first.experiment_id}/")
    page.click("button:has-text('Launch run')")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    second = Run.objects.latest("id")
    wait_for(lambda: Run.objects.get(pk=second.pk).status == "succeeded", 90, "the second run", worker)

    page.goto(f"/projects/{project.pk}/compare/?runs={first.pk},{second.pk}")
    page.wait_for_function(
        "() => document.querySelectorAll('#compare-charts .js-plotly-plot, #compare-charts .chart').length > 0"
    )
    screenshot(page, "07-compare")
    assert page.js_errors == []
