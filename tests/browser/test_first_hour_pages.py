"""The pages a new user meets in the first hour, in a real browser: the run page's ETA formatter, a verifier
job's true state (no "Finished 1/1/1970" while queued, no Cancel once finished), and the Evaluate form
marking checkpoints whose files ``checkpoint.save_total_limit`` deleted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.workers.helpers import make_project, make_user

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AUDIT_REPORT = {"total": 2, "accepted": 2, "errors": 0, "rate": 1.0, "rows": []}


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (59.4, "59s"), (59.6, "1m 0s"), (119.6, "2m 0s"), (125, "2m 5s"), (3599.4, "59m 59s"),
    (3599.6, "1h 0m"), (7170, "2h 0m"), (3661, "1h 1m"), (-3, "0s"),
])  # fmt: skip
def test_the_eta_formatter_carries_rounding_into_minutes_and_hours(
    page: Any, seconds: float, text: str
) -> None:
    page.goto("/accounts/login/")
    assert page.evaluate("(s) => window.rlvr.formatDuration(s)", seconds) == text


def test_a_verifier_job_shows_its_true_state_and_cancel_only_while_it_can_act(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from django.utils import timezone

    from webapp.verification.models import JobKind, JobStatus, VerificationJob
    from webapp.verification.services import verifier_definition_create

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    definition = verifier_definition_create(
        project=project, actor=owner, name="answer", verifier="exact", params={}
    )
    version = definition.versions.get(number=1)
    job = VerificationJob.objects.create(kind=JobKind.AUDIT, version=version, created_by=owner, total=2)
    sign_in("alice", PASSWORD)

    page.goto(f"/verifier-versions/{version.pk}/")
    page.wait_for_function("() => document.getElementById('audit-status').textContent.startsWith('Queued')")
    status = page.inner_text("#audit-status")
    assert "Queued by alice at" in status and "Finished" not in status and "1970" not in status
    assert page.is_visible("#audit-cancel")
    screenshot(page, "queued")

    now = timezone.now()
    VerificationJob.objects.filter(pk=job.pk).update(
        status=JobStatus.SUCCEEDED, done=2, started_at=now, finished_at=now, result=AUDIT_REPORT
    )
    page.reload()
    page.wait_for_selector("#audit-table[data-ready='1']", state="attached")
    status = page.inner_text("#audit-status")
    assert status.startswith("Finished ") and "(started " in status and "1970" not in status
    assert not page.is_visible("#audit-cancel")
    screenshot(page, "finished")
    assert page.js_errors == []


def test_the_evaluate_form_greys_out_a_deleted_checkpoint(
    page: Any, sign_in: Callable[[str, str], Any], tmp_path: Path, screenshot: Callable[[Any, str], Path]
) -> None:
    from django.test import override_settings

    from webapp.benchmarks.services import benchmark_create
    from webapp.experiments.models import Checkpoint
    from webapp.experiments.services import experiment_create, run_launch

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    experiment = experiment_create(
        project=project, actor=owner, name="tiny", config={"model": {"name_or_path": "tiny:addition"}}
    )
    with override_settings(RLVR_ENQUEUE=False):
        run = run_launch(experiment=experiment, actor=owner)
    (tmp_path / "step-000400").mkdir()
    Checkpoint.objects.create(run=run, step=200, path=str(tmp_path / "step-000200"))  # pruned
    kept = Checkpoint.objects.create(run=run, step=400, path=str(tmp_path / "step-000400"))
    benchmark = benchmark_create(
        project=project,
        actor=owner,
        name="add",
        source="builtin",
        builtin="builtin:addition",
        config={"n_samples": 2, "max_problems": 2},
    )
    sign_in("alice", PASSWORD)

    page.goto(f"/benchmarks/{benchmark.pk}/")
    page.wait_for_selector("#targets label[data-deleted]")
    deleted = page.locator("#targets label[data-deleted='1']")
    assert deleted.count() == 1 and "step 200" in deleted.inner_text() and "deleted" in deleted.inner_text()
    assert deleted.locator("input").is_disabled()
    offered = page.locator("#targets label[data-deleted='0'] input")
    assert offered.count() == 1 and offered.get_attribute("value") == str(kept.pk)
    screenshot(page, "targets")
    assert page.js_errors == []
