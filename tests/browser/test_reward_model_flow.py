"""A reward model from start to use, in a browser, with a real Celery worker: pairs built from a run's verifier
outcomes, a Bradley-Terry version trained on the worker with live progress, its pairwise accuracy measured by an
evaluation, then a policy run launched with it as the reward and a weight-0 verifier beside it, whose run page shows
the learned-reward-vs-verifier panel."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import PASSWORD
from tests.trainer.loop_helpers import tiny_config
from tests.workers.helpers import CeleryWorker, make_project, make_user, wait_for
from tests.workers.test_reward_model_training import _record_sum_rollouts

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_pairs_from_verifier_outcomes_train_evaluate_and_reward_a_run(
    page: Any,
    live_server_url: str,
    sign_in: Callable[[str, str], Any],
    screenshot: Callable[[Any, str], Path],
    start_worker: Callable[..., CeleryWorker],
    random_model_dir: Path,
    tmp_path: Path,
    settings: Any,
) -> None:
    from webapp.experiments.models import Run
    from webapp.experiments.services import experiment_create, run_launch
    from webapp.rewards.models import RewardJob, RewardModelVersion

    owner = make_user("alice")
    project = make_project(owner, "Lab")
    settings.RLVR_ENQUEUE = False
    source = run_launch(
        experiment=experiment_create(
            project=project, actor=owner, name="sums", config={"model": {"name_or_path": "tiny:addition"}}
        ),
        actor=owner,
    )
    settings.RLVR_ENQUEUE = True
    _record_sum_rollouts(source)  # 2 steps x 40 prompts x 4: right sums correct, wrong ones not
    worker = start_worker("rmflow@%h")
    evaluator = CeleryWorker(worker.env, tmp_path / "eval-worker.log", "rmeval@%h", queues="eval").start()
    try:
        sign_in("alice", PASSWORD)
        page.goto(f"{live_server_url}/projects/{project.pk}/")
        page.click("#reward-models-link")
        page.fill("#rm-name", "Sum RM")
        page.click("#reward-model-create button[type=submit]")
        page.wait_for_selector("#train-link")
        page.click("#train-link")

        # Pairs from the run's verifier outcomes; a small model and a short schedule.
        page.check("input[name=source_kind][value=run]")
        page.select_option("#rm-train-run", str(source.pk))
        page.fill("#rm-train-per-prompt", "4")
        page.fill("#rm-train-base", str(random_model_dir))
        page.fill("#rm-train-lr", "0.003")
        page.fill("#rm-train-epochs", "2")
        page.fill("#rm-train-batch", "16")
        page.fill("#rm-train-maxlen", "32")
        page.fill("#rm-train-held", "0.2")
        screenshot(page, "rm-01-train-form")
        page.click("#rm-train-submit")
        page.wait_for_selector("#rm-job-status")
        job = RewardJob.objects.latest("id")
        wait_for(
            lambda: RewardJob.objects.get(pk=job.pk).status in ("succeeded", "failed"),
            300,
            "training",
            worker,
        )
        job.refresh_from_db()
        assert job.status == "succeeded", job.error + worker.log()
        page.wait_for_function(
            "() => document.getElementById('rm-job-status').textContent.trim() === 'succeeded'",
            timeout=20_000,
        )
        page.wait_for_selector("#rm-chart-accuracy .main-svg")
        screenshot(page, "rm-02-trained")
        version = RewardModelVersion.objects.get(pk=job.output_version_id)
        assert version.metrics["held_out_pairwise_accuracy"] >= 0.85

        # Its pairwise accuracy on the run's pairs, from the version page's Evaluate link.
        page.goto(f"{live_server_url}/reward-model-versions/{version.pk}/")
        page.click("#rm-evaluate-link")
        page.select_option("select[name=pairwise_kind]", "run")
        page.fill("input[name=pairwise_id]", str(source.pk))
        page.uncheck("input[name=bon]")
        page.uncheck("input[name=audit]")
        page.click("#evaluation-form button[type=submit]")
        page.wait_for_selector("#job-status")
        page.wait_for_function(
            "() => document.getElementById('job-status').textContent.trim() === 'succeeded'", timeout=240_000
        )
        row = page.locator("#source-table").inner_text()
        accuracy = float(re.search(r"0\.\d+|1\.0+", row.split("Sum RM", 1)[-1]).group(0))  # type: ignore[union-attr]
        assert accuracy >= 0.85, row
        screenshot(page, "rm-03-evaluated")

        # A policy run on the learned reward, the verifier beside it at weight 0: the watch panel is on its page.
        config = tiny_config(
            random_model_dir,
            tmp_path / "unused",
            verifiers=[version.config_entry, {"name": "exact", "label": "verifier"}],
        ).model_dump(mode="json")
        config["algorithm"]["reward_weights"] = [1.0, 0.0]
        config["training"]["max_steps"] = 2
        settings.RLVR_MODEL_ROOTS = [*settings.RLVR_MODEL_ROOTS, str(random_model_dir.parent)]
        experiment = experiment_create(project=project, actor=owner, name="on the RM", config=config)
        run = run_launch(experiment=experiment, actor=owner)
        wait_for(
            lambda: Run.objects.get(pk=run.pk).status in ("succeeded", "failed"), 300, "policy run", worker
        )
        run.refresh_from_db()
        assert run.status == "succeeded", worker.log()
        page.goto(f"{live_server_url}/runs/{run.pk}/")
        page.wait_for_selector("#reward-watch #reward-watch-chart .main-svg")
        assert "reward/sum_rm_mean" in page.locator("#reward-watch").inner_text()
        screenshot(page, "rm-04-run-watch")
    finally:
        evaluator.stop()
