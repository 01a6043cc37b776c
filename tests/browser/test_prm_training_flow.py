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
    # the form's script, which hides the kind not chosen, runs at the page's end
    page.wait_for_load_state("load")
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


def _train_form(page: Any, live_server_url: str, sign_in: Callable[[str, str], Any]) -> None:
    """alice's empty reward model's training form, process reward model chosen."""
    from webapp.rewards.services import reward_model_create

    owner = make_user("alice")
    reward_model = reward_model_create(project=make_project(owner, "Lab"), actor=owner, name="Chain PRM")
    sign_in("alice", PASSWORD)
    page.goto(f"{live_server_url}/reward-models/{reward_model.pk}/train/")
    page.check("input[name=model_kind][value=prm]")


def test_the_prm_form_shows_only_the_fields_of_the_chosen_label_source(
    page: Any, live_server_url: str, sign_in: Callable[[str, str], Any]
) -> None:
    _train_form(page, live_server_url, sign_in)
    sampled, file_fields = (
        ("#prm-policy", "#prm-level", "#prm-problems", "#prm-samples"),
        ("#prm-dataset", "#prm-format"),
    )
    shown = {
        "oracle": sampled,
        "monte_carlo": (*sampled, "#prm-k"),
        "file": file_fields,
    }
    for source, visible in shown.items():
        page.check(f"input[name=labels_source][value={source}]")
        for field in (*sampled, "#prm-k", *file_fields):
            assert page.is_visible(field) == (field in visible), (source, field)
            assert page.is_enabled(field) == (field in visible), (source, field)  # a hidden field is not sent
    assert page.js_errors == []


def test_the_training_forms_radios_sit_left_of_their_labels(
    page: Any, live_server_url: str, sign_in: Callable[[str, str], Any]
) -> None:
    _train_form(page, live_server_url, sign_in)
    for name in ("model_kind", "labels_source"):
        for radio in page.locator(f"input[type=radio][name={name}]").all():
            box, label = radio.bounding_box(), radio.locator("xpath=..").bounding_box()
            assert box is not None and label is not None
            assert box["width"] < 30 and box["x"] - label["x"] < 5, (
                name,
                box,
                label,
            )  # a box at the label's start
            assert box["y"] < label["y"] + 20, (
                name,
                box,
                label,
            )  # on the label's first line, not a line above it
