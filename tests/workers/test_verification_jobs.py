"""A real ``celery worker -Q default`` process runs a rescore job end to end: the API answers 202, the
worker scores the run's rollouts in chunks with the math verifier (whose timeout-pool processes a prefork
child may start only after ``workers.processes.allow_child_processes``) and stores the result the page
then reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.webapp.helpers import rollout_record
from tests.workers.helpers import (
    CeleryWorker,
    clear_queues,
    make_project,
    make_user,
    redis_url,
    wait_for,
    worker_env,
)
from webapp.experiments.services import experiment_create, run_launch, run_record_step
from webapp.verification.models import JobStatus, VerificationJob
from webapp.verification.services import verifier_definition_create
from workers.celery_app import app
from workers.tasks_verification import run_verification_job

pytestmark = pytest.mark.timeout(120)


def test_the_verification_task_goes_to_the_default_queue_and_is_acknowledged_late() -> None:
    assert run_verification_job.acks_late and run_verification_job.reject_on_worker_lost
    assert app.amqp.router.route({}, run_verification_job.name)["queue"].name == "default"


@pytest.mark.slow
def test_a_worker_rescores_a_whole_run_in_chunks(real_services: None, tmp_path: Path, settings: Any) -> None:
    owner = make_user("alice")
    project = make_project(owner)
    experiment = experiment_create(
        project=project, actor=owner, name="exp", config={"model": {"name_or_path": "tiny:addition"}}
    )
    settings.RLVR_ENQUEUE = False
    run = run_launch(experiment=experiment, actor=owner)  # stays queued: no training worker here
    settings.RLVR_ENQUEUE = True  # the rescore job below is sent to the worker
    # 3 steps x 250 rollouts, all judged wrong by the run; a math check accepts \\dfrac12 for 0.5 (1 in 5).
    for step in (1, 2, 3):
        records = [
            rollout_record(step, g, i, completion="\\boxed{\\dfrac12}" if i == 0 else "\\boxed{2}", answer="0.5",
                           correct=False)
            for g in range(50) for i in range(5)
        ]  # fmt: skip
        run_record_step(run_id=run.pk, step=step, max_steps=3, metrics={}, rollouts=records)
    version = verifier_definition_create(
        project=project, actor=owner, name="boxed", verifier="math", params={"extract": "boxed"}
    ).versions.get()

    clear_queues(redis_url())
    worker = CeleryWorker(
        worker_env(tmp_path / "data"), tmp_path / "worker.log", "vjobs@%h", queues="default"
    ).start()
    try:
        client = APIClient()
        client.force_authenticate(user=owner)
        resp = client.post(f"/api/verifier-versions/{version.pk}/rescore/", {"run": run.pk}, format="json")
        assert resp.status_code == 202, resp.json()
        job_id = resp.json()["id"]
        wait_for(lambda: VerificationJob.objects.get(pk=job_id).finished, 60, "the rescore job", worker)
        body = client.get(resp.json()["url"]).json()
    finally:
        worker.stop()
        clear_queues(redis_url())
    assert body["status"] == JobStatus.SUCCEEDED, body["error"] + worker.log()
    assert (body["done"], body["total"], body["attempts"]) == (750, 750, 1)
    result = body["result"]
    assert (result["scored"], result["changed"], result["newly_correct"], result["errors"]) == (
        750,
        150,
        150,
        0,
    )
    assert [r["step"] for r in result["rows"][:2]] == [3, 3] and result["rows"][-1]["step"] == 1
