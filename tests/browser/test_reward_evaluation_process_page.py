"""Process rewards on the reward evaluation page, in a real browser: the form adds the chain oracle as a step scorer
with the process part; a finished evaluation shows the "Process rewards" table (first-error F1 with its interval,
the accuracies on erroneous and right solutions, the step ECE), draws the PRM Best-of-N curves with the other
sources' curves (or in the card's own chart when the part scored a subset of the samples), shows a step scorer's
label with markup as text, and its CSV export carries the process columns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import clear_queues, make_project, make_user, redis_url

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

EVIL = '<img src=x onerror="window.__xss=1">prm'
NS = [1, 2, 4]
BASE = {"random": [0.2] * 3, "majority": [0.2, 0.25, 0.3], "oracle": [0.2, 0.35, 0.5]}


def _curve(values: list[float]) -> dict[str, Any]:
    return {"ns": NS, "best_of_n": values, "best_of_n_ci": [[v - 0.1, v + 0.1] for v in values], **BASE,
            "extra": {"aggregate": "min"}}  # fmt: skip


def _process(f1: float, ci: list[float], erroneous: float, right: float, ece: float, bon: list[float]) -> Any:
    return {
        "scorer": "prm", "reference": "chain_oracle", "samples": 32, "steps_mean": 3.5, "absent_steps": 0,
        "first_error": {"f1": f1, "f1_ci": ci, "accuracy_erroneous": erroneous, "accuracy_correct": right,
                        "erroneous": 24, "correct": 8, "threshold": 0.5},
        "calibration": {"ece": ece, "steps": 112, "absent": 0, "bins": []}, "best_of_n": _curve(bon),
    }  # fmt: skip


def _finished_job(project: Any, owner: Any, *, same_samples: bool) -> int:
    from webapp.rewards.evaluation_services import evaluation_finish, reward_evaluation_start

    job = reward_evaluation_start(
        project=project,
        actor=owner,
        data={"sources": [{"name": "chain_arithmetic"}, {"process_scorer": {"name": "oracle_chain"}}],
              "best_of_n": {"n": 4, "problems": 8}, "process": {}},
        name="process side by side",
    )  # fmt: skip
    oracle = {**_process(1.0, [1.0, 1.0], 1.0, 1.0, 0.0, [0.2, 0.35, 0.5]), "scorer": "oracle_chain"}
    result = {
        "best_of_n": {"ns": NS, "benchmark": "builtin:chain_arithmetic", "policy": "tiny:chain", "n": 4,
                      "problems": 8, "baselines": BASE},
        "process": {"aggregate": "min", "threshold": 0.5, "bins": 10, "segmenter": "lines",
                    "reference": "chain_oracle",
                    "best_of_n": {"ns": NS, "problems": 8, "samples_per_problem": 4, "baselines": BASE,
                                  "same_samples": same_samples,
                                  "orm": [{"label": "chain_arithmetic", **_curve([0.2, 0.3, 0.45])}]}},
        "sources": [
            {"label": "chain_arithmetic", "name": "chain_arithmetic", "best_of_n": _curve([0.2, 0.3, 0.45])},
            {"label": "oracle_chain", "name": "oracle_chain", "kind": "process", "process": oracle},
            {"label": EVIL, "name": "prm", "kind": "process",
             "process": _process(0.4, [0.2, 0.6], 0.375, 0.5, 0.125, [0.2, 0.28, 0.33])},
        ],
    }  # fmt: skip
    evaluation_finish(job_id=job.pk, status="succeeded", result=result)
    return job.pk


def _legend(page: Any, chart: str) -> set[str]:
    page.wait_for_selector(f"#{chart} .main-svg")
    return set(page.eval_on_selector_all(f"#{chart} .legendtext", "els => els.map((e) => e.textContent)"))


def test_the_form_adds_the_oracle_and_the_page_shows_first_error_f1_and_prm_curves(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.rewards.models import RewardJob

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    clear_queues(redis_url())
    try:
        same = _finished_job(project, owner, same_samples=True)
        subset = _finished_job(project, owner, same_samples=False)
        sign_in("alice", PASSWORD)
        page.goto(f"/projects/{project.pk}/reward-evaluations/")
        page.fill("input[name=bon_problems]", "4")
        page.check("input[name=process]")
        page.check("input[name=process_oracle]")
        page.fill("input[name=process_samples]", "2")
        page.click("#evaluation-form button[type=submit]")
        page.wait_for_url("**/reward-evaluations/*/")
        assert page.locator("#job-status").inner_text().strip() == "queued"
    finally:
        clear_queues(redis_url())  # no eval worker here: drop the messages the jobs sent
    started = RewardJob.objects.latest("id")
    assert [(s["name"], s.get("kind")) for s in started.config["sources"]] == [
        ("oracle_chain", "process"), ("chain_arithmetic", None)
    ]  # fmt: skip
    assert started.config["process"]["samples_per_problem"] == 2

    page.goto(f"/reward-evaluations/{same}/")
    table = page.locator("#process-table")
    text = table.inner_text()
    assert "1.000 [1.000, 1.000]" in text and "0.400 [0.200, 0.600]" in text
    assert "0.375 (24)" in text and "0.500 (8)" in text and "0.125" in text
    assert "prm best-of-4 (min)" in text.lower() and "0.330" in text
    assert EVIL in text and page.evaluate("() => window.__xss") is None  # a label is text, never markup
    assert page.locator("#source-table").inner_text().count("\n") >= 1
    assert EVIL not in page.locator("#source-table").inner_text()  # step scorers only in the process table
    legend = _legend(page, "bon-chart")
    assert {"chain_arithmetic", "oracle_chain (PRM, min)", f"{EVIL} (PRM, min)", "majority vote"} <= legend
    assert page.locator("#prm-bon-chart").count() == 0
    screenshot(page, "process_rewards")

    with page.expect_download() as download:
        page.click("#export-csv")
    lines = Path(download.value.path()).read_text(encoding="utf-8").strip().splitlines()
    assert "first_error_f1" in lines[0] and "step_ece" in lines[0] and len(lines) == 4
    assert (
        lines[2].startswith("oracle_chain,oracle_chain,") and ",0.4,0.2,0.6,0.375,0.5,0.125,0.33" in lines[3]
    )

    page.goto(
        f"/reward-evaluations/{subset}/"
    )  # a subset of the samples: the card's own chart, ORM recomputed
    legend = _legend(page, "prm-bon-chart")
    assert {"chain_arithmetic", "oracle_chain (PRM, min)", f"{EVIL} (PRM, min)", "oracle (pass@N)"} <= legend
    assert not any("PRM" in name for name in _legend(page, "bon-chart"))
    assert page.js_errors == []
