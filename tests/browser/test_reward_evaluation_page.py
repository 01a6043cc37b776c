"""Reward evaluations in a real browser: start one from the project's evaluation form (the job page shows it queued
with its progress), then open a finished evaluation: the sources side by side in the table, the Best-of-N chart with
one line per source plus random choice, majority vote and the oracle, a source label with markup shown as text, and
the CSV export downloads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import clear_queues, make_project, make_user, redis_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

EVIL = '<img src=x onerror="window.__xss=1">rm'


def _finished_job(project: Any, owner: Any) -> int:
    from webapp.rewards.evaluation_services import evaluation_finish, reward_evaluation_start

    job = reward_evaluation_start(
        project=project,
        actor=owner,
        data={"sources": [{"name": "chain_arithmetic"}], "audit": True},
        name="side by side",
    )

    def curve(values: list[float]) -> dict[str, Any]:
        return {"ns": [1, 2, 4], "best_of_n": values, "random": [0.2] * 3, "majority": [0.2, 0.2, 0.3],
                "oracle": [0.2, 0.35, 0.5], "best_of_n_ci": [[v - 0.1, v + 0.1] for v in values]}  # fmt: skip

    result = {
        "best_of_n": {"ns": [1, 2, 4], "benchmark": "builtin:chain_arithmetic", "policy": "tiny:chain", "n": 4,
                      "problems": 8, "baselines": {"random": [0.2] * 3, "majority": [0.2, 0.2, 0.3],
                                                   "oracle": [0.2, 0.35, 0.5]}},
        "sources": [
            {"label": "chain_arithmetic", "name": "chain_arithmetic", "best_of_n": curve([0.2, 0.35, 0.5]),
             "pairwise": {"accuracy": 1.0, "ci_low": 1.0, "ci_high": 1.0, "scored": 6, "absent": 0},
             "audit": {"fpr": 0.0, "rows": [{"key": "colon", "family": "master_key", "example": ":",
                                             "responses": 2, "accepted": 0, "absent": 0, "fpr": 0.0}]}},
            {"label": EVIL, "name": "reward_model", "best_of_n": curve([0.2, 0.25, 0.3]),
             "pairwise": {"accuracy": 0.625, "ci_low": 0.25, "ci_high": 0.875, "scored": 8, "absent": 2},
             "audit": {"fpr": 0.97, "rows": []}},
        ],
    }  # fmt: skip
    evaluation_finish(job_id=job.pk, status="succeeded", result=result)
    return job.pk


def test_start_an_evaluation_then_read_a_finished_one_with_its_chart_and_export(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    owner = make_user("alice")
    project = make_project(owner, "Lab")
    job_id = _finished_job(project, owner)
    sign_in("alice", PASSWORD)

    clear_queues(redis_url())
    try:
        page.goto(f"/projects/{project.pk}/reward-evaluations/")
        page.fill("input[name=bon_problems]", "4")
        screenshot(page, "reward_evaluation_form")
        page.click("#evaluation-form button[type=submit]")
        page.wait_for_url("**/reward-evaluations/*/")
        assert page.locator("#job-status").inner_text().strip() == "queued"
        assert page.locator("#progress-card").is_visible()
    finally:
        clear_queues(redis_url())  # no eval worker here: drop the message the form's job sent

    page.goto(f"/reward-evaluations/{job_id}/")
    table = page.locator("#source-table")
    assert table.is_visible()
    text = table.inner_text()
    assert "1.000 [1.000, 1.000]" in text and "0.625 [0.250, 0.875]" in text and "0.970" in text
    assert "best-of-4" in text.lower() and "oracle (pass@4)" in text
    assert EVIL in text and page.evaluate("window.__xss") is None  # the label is text, never markup
    page.wait_for_selector("#bon-chart .main-svg")
    legend = page.eval_on_selector_all("#bon-chart .legendtext", "els => els.map((e) => e.textContent)")
    assert {"chain_arithmetic", "random choice", "majority vote", "oracle (pass@N)", EVIL} == set(legend)
    screenshot(page, "reward_evaluation_result")

    with page.expect_download() as download:
        page.click("#export-csv")
    body = Path(download.value.path()).read_text(encoding="utf-8")
    lines = body.strip().splitlines()
    assert lines[0].startswith("source,name,pairwise_accuracy") and len(lines) == 3
    assert lines[1].startswith("chain_arithmetic,chain_arithmetic,1.0")
