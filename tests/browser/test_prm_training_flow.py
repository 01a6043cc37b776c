"""A process reward model trained from the browser with a real Celery worker: the training form of a new reward model
shows the step-label fields once "process reward model" is chosen, the job page draws the loss and held-out step
accuracy live and ends with the held-out figures against the majority class, and the new version's page gives the
process_reward snippet to use."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import CeleryWorker, make_project, make_user, wait_for
from tests.workers.test_prm_model_training import _math_shepherd_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_prm_trained_from_an_uploaded_file_in_the_browser(
    page: Any,
    live_server_url: str,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    start_worker: Callable[..., CeleryWorker],
    random_model_dir: Path,
    tmp_path: Path,
) -> None:
    from webapp.datafiles.models import Dataset
    from webapp.rewards.models import RewardJob

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    path = _math_shepherd_file(tmp_path / "steps.jsonl")
    dataset = Dataset.objects.create(
        project=project, name="chain steps", path=str(path), format="jsonl", rows=16
    )
    worker = start_worker("prmflow@%h")
    sign_in("alice", PASSWORD)
    page.goto(f"{live_server_url}/projects/{project.pk}/")
    page.click("#reward-models-link")
    page.fill("#rm-name", "Chain PRM")
    page.click("#reward-model-create button[type=submit]")
    page.click("#train-link")
    page.wait_for_selector("#rm-train-form")
    assert page.is_visible("#rm-train-pairs") and not page.is_visible("#rm-train-prm")
    page.check("input[name=model_kind][value=prm]")
    assert page.is_visible("#rm-train-prm") and not page.is_visible("#rm-train-pairs")
    page.check("input[name=labels_source][value=file]")
    page.select_option("#prm-dataset", str(dataset.pk))
    page.fill("#rm-train-base", str(random_model_dir))
    for field, value in (("#prm-lr", "0.001"), ("#prm-epochs", "1"), ("#prm-batch", "4"), ("#prm-maxlen", "64"),
                         ("#prm-held", "0.25"), ("#prm-eval", "1")):  # fmt: skip
        page.fill(field, value)
    screenshot(page, "prm-01-train-form")
    page.click("#rm-train-submit")
    page.wait_for_selector("#rm-job-kind")
    job = RewardJob.objects.latest("id")
    wait_for(
        lambda: RewardJob.objects.get(pk=job.pk).status in ("succeeded", "failed"),
        300,
        "PRM training",
        worker,
    )
    job.refresh_from_db()
    assert job.status == "succeeded", job.error + worker.log()
    page.wait_for_function(
        "() => document.getElementById('rm-job-status').textContent.trim() === 'succeeded'", timeout=20_000
    )
    page.wait_for_selector("#rm-chart-accuracy .main-svg")
    result = page.locator("#rm-job-result").inner_text()
    assert "held-out step accuracy" in result and "majority class" in result and "first-error F1" in result
    screenshot(page, "prm-02-trained")

    page.click("#rm-job-version")
    snippet = page.locator("#rm-config-entry").inner_text()
    assert "process_reward:" in snippet and f"model: rm:{job.output_version_id}" in snippet
    assert page.is_visible("#prm-held-out")
    screenshot(page, "prm-03-version")
    assert page.js_errors == []
