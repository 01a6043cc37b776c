"""Verifiers in a real browser: define a math verifier from the project page, save a test case, score a
pasted completion on the test bench (verdict, extracted answer, reason; markup stays text), and pick the
saved version in the experiment form; run the metamorphic audit and a rescore of a run as jobs on a real
``celery worker -Q default`` (progress bar, result tables, the finished audit shown again on reload)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD, store_step, token_record
from tests.workers.helpers import CeleryWorker, clear_queues, make_project, make_user, redis_url, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def verification_worker(real_services: None, tmp_path: Path) -> Iterator[CeleryWorker]:
    """A worker on the ``default`` queue, where the daphne server sends audit and rescore jobs."""
    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "worker.log", "vjobs@%h", queues="default"
    )
    yield worker.start()
    worker.stop()
    clear_queues(redis_url())


def seed_rollouts(owner: Any, project: Any) -> Any:
    """A queued run with one step of four rollouts (reference 4); the stored verdicts say the even ones
    are correct, a boxed-answer math check rejects every one of them (none is boxed)."""
    from django.test import override_settings

    from webapp.experiments.services import experiment_create, run_launch

    experiment = experiment_create(
        project=project, actor=owner, name="arith", config={"model": {"name_or_path": "tiny:addition"}}
    )
    with override_settings(RLVR_ENQUEUE=False):
        run = run_launch(experiment=experiment, actor=owner)
    evil = '<img src=x onerror="window.__xss=2"> 4'
    store_step(run, 1, [token_record(1, 0, i, ["a"], completion=evil if i == 0 else " 4") for i in range(4)])
    return run


def test_define_a_verifier_run_the_bench_audit_it_and_pick_it_for_an_experiment(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path],
    verification_worker: CeleryWorker,
) -> None:  # fmt: skip
    owner = make_user("alice")
    project = make_project(owner, "Lab")
    run = seed_rollouts(owner, project)
    sign_in("alice", PASSWORD)

    page.goto(f"/projects/{project.pk}/")
    page.click("text=Verifiers")
    page.fill("#vf-name", "Final answer")
    page.select_option("#vf-verifier", "math")
    # the schema's parameter help (folded), filled in by the page's script once it has the choice
    page.wait_for_function(
        "() => (document.querySelector('#vf-param-table')?.textContent || '').includes('timeout_s')"
    )
    page.fill("#vf-params", json.dumps({"extract": "boxed"}))
    page.click("#verifier-create button[type=submit]")
    page.wait_for_selector("#version-table")
    assert "v1" in page.inner_text("#version-table") and "math" in page.inner_text("#version-table")

    page.fill("#case-form textarea[name=completion]", "so \\boxed{\\dfrac12}")
    page.fill("#case-form textarea[name=reference]", "0.5")
    page.click("#case-form button[type=submit]")
    page.wait_for_selector("#case-table")
    assert "cases pass" in page.inner_text("h1")

    page.fill("#bench-completion", "The answer is \\boxed{\\frac{1}{2}}.")
    page.fill("#bench-reference", "0.5")
    page.click("#bench-run")
    page.wait_for_selector("#bench-result[data-ready='1']", timeout=60_000)
    assert page.inner_text("#bench-verdict") == "accepted"
    assert "1/2" in page.inner_text("#bench-extracted") or "frac" in page.inner_text("#bench-extracted")
    assert page.inner_text("#bench-reason") == "equivalent"
    screenshot(page, "bench-accepted")

    evil = '<img src=x onerror="window.__xss=1">'
    page.fill("#bench-completion", evil)
    page.click("#bench-run")
    page.wait_for_function(
        "() => document.getElementById('bench-verdict').textContent === 'rejected'", timeout=60_000
    )
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("#bench img").count() == 0

    page.click("text=Audit & rescore v1")
    page.click("#audit-run")
    page.wait_for_selector("#audit-progress:not([hidden])")
    page.wait_for_selector("#audit-table[data-ready='1']", timeout=60_000)
    audit = page.inner_text("#audit-table")
    assert "dfrac_no_braces" in audit and "thousands_comma" in audit
    # The worker's pool child may start the math verifier's timeout-pool processes: no verdict is an error.
    assert page.inner_text("#audit-summary").endswith(" 0 errors.")
    assert "variants accepted" in page.inner_text("#audit-summary")
    assert page.get_attribute("#audit-progress", "data-status") == "succeeded"
    screenshot(page, "audit")

    page.select_option("#rescore-run", str(run.pk))
    page.click("#rescore-go")
    page.wait_for_selector("#rescore-table[data-ready='1']", timeout=60_000)
    assert "scored 4 of 4 rollouts: 2 verdicts change" in page.inner_text("#rescore-summary")
    assert page.locator("#rescore-table tbody tr").count() == 2 and page.locator("#rescore img").count() == 0
    screenshot(page, "rescore")

    page.reload()  # a finished job is shown again: the result outlives the page
    page.wait_for_selector("#audit-table[data-ready='1']")
    page.wait_for_selector("#rescore-table[data-ready='1']")
    assert "variants accepted" in page.inner_text("#audit-summary")
    assert page.evaluate("typeof window.__xss") == "undefined"

    page.goto(f"/projects/{project.pk}/experiments/new/")
    page.wait_for_selector("#verifier-picker option >> nth=1", state="attached")
    page.select_option("#verifier-picker", index=1)
    page.click("#verifier-picker-replace")
    entries = json.loads(page.input_value("#cfg-verifiers"))
    assert entries == [{"name": "math", "params": entries[0]["params"], "label": "final_answer"}]
    assert entries[0]["params"]["extract"] == "boxed"
    screenshot(page, "picker")
    assert page.js_errors == []
