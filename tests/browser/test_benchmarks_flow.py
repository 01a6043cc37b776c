"""Benchmarks in a browser with a real Celery worker on the ``eval`` queue: pick the tiny base model on
the built-in addition benchmark (n=2, 3 problems), press Evaluate, watch the row's progress and the results
table fill without a reload, then drill into a problem's samples and tokens."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import CeleryWorker, clear_queues, make_project, make_user, redis_url, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture
def eval_worker(real_services: None, tmp_path: Path) -> Iterator[CeleryWorker]:
    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "eval-worker.log", "eval@%h", queues="eval"
    ).start()
    yield worker
    worker.stop()
    clear_queues(redis_url())


def test_evaluate_the_base_model_and_see_the_table_fill(
    page: Any,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    eval_worker: CeleryWorker,
) -> None:
    from webapp.benchmarks.services import benchmark_create
    from webapp.experiments.services import experiment_create

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    experiment_create(
        project=project, actor=owner, name="tiny", config={"model": {"name_or_path": "tiny:addition"}}
    )
    benchmark = benchmark_create(
        project=project,
        actor=owner,
        name="add_small",
        source="builtin",
        builtin="builtin:addition",
        config={"n_samples": 2, "max_problems": 3, "batch_size": 2, "bootstrap_samples": 20},
    )
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/")
    page.click("a:has-text('Benchmarks')")
    page.wait_for_url(re.compile(r"/benchmarks/$"))
    page.click(f"a[href='/benchmarks/{benchmark.pk}/']")

    page.check("#targets input[name=experiment]")
    page.click("#evaluate-button")
    page.wait_for_selector("#eval-table tbody tr[data-status]")
    try:
        page.wait_for_selector("table#results td[data-metric='pass@1 (n=2)']", timeout=180_000)
    except Exception as err:
        from webapp.benchmarks.models import EvalRun

        screenshot(page, "timeout")
        rows = list(EvalRun.objects.values("status", "problems_done", "error_message"))
        raise AssertionError(f"{err}\nevaluations: {rows}\nworker log:\n{eval_worker.log()}") from None
    screenshot(page, "01-benchmark-table")
    cell = page.locator("#results td[data-metric='pass@1 (n=2)']")
    assert re.fullmatch(r"\d+\.\d", cell.inner_text().strip()), cell.inner_text()
    assert "95% CI" in (cell.get_attribute("title") or "")
    assert page.locator("#results td.best").count() >= 1
    assert page.locator("#eval-table tbody tr[data-status='succeeded']").count() == 1
    page.wait_for_selector("#passk-chart .plot-container")

    page.click("#eval-table tbody a")
    page.wait_for_url(re.compile(r"/evals/\d+/$"))
    page.wait_for_selector("#problem-table tbody tr")
    assert page.locator("#problem-table tbody tr").count() == 3
    page.click("#problem-table tbody tr >> nth=0")
    page.wait_for_selector("#tv-tokens[data-ready='1']")
    assert int(page.get_attribute("#tv-tokens", "data-tokens") or 0) >= 1
    assert page.locator("#sample-table tbody tr").count() == 2
    screenshot(page, "02-eval-drilldown")
    assert not page.js_errors, page.js_errors
