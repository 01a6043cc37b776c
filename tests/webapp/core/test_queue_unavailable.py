"""A launch while the task queue (Redis) is down answers 503 and leaves the run ``not_queued``; once the
queue is back, ``POST /api/runs/<id>/queue/`` sends it. The broker is a real Redis URL nobody listens on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django import Settings
from rest_framework.test import APIClient

from tests.workers.helpers import clear_queues
from webapp.experiments.models import Experiment, Run, RunEvent
from webapp.stack import free_port
from webapp.teams.models import Project
from workers.celery_app import app

pytestmark = pytest.mark.django_db(transaction=True)  # the service's commit is the outermost: hooks run in it

Api = Callable[[User | None], APIClient]


def use_broker(url: str) -> None:
    """Point the Celery app's producer at ``url`` (its connection pools are built on first use)."""
    app.conf.update(broker_url=url)
    app._pool = None  # type: ignore[attr-defined]  # Celery keeps no public way to drop its pools
    app.amqp._producer_pool = None  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def enqueue_off(settings: Settings) -> None:
    settings.RLVR_ENQUEUE = False  # only the tests that ask for ``broker`` send anything


@pytest.fixture
def broker(settings: Settings) -> Iterator[Callable[[bool], str]]:
    """``broker(up)``: the test Redis when ``up``, else a port nobody listens on; RLVR_ENQUEUE on."""
    settings.RLVR_ENQUEUE = True
    live = str(settings.REDIS_URL)
    dead = f"redis://127.0.0.1:{free_port()}/0"

    def switch(up: bool) -> str:
        url = live if up else dead
        settings.REDIS_URL = url
        use_broker(url)
        return url

    yield switch
    use_broker(live)
    clear_queues(live)


def test_a_launch_while_redis_is_down_answers_503_and_saves_the_run_as_not_queued(
    api: Api, alice: User, experiment: Experiment, broker: Callable[[bool], str]
) -> None:
    dead = broker(False)
    response = api(alice).post(f"/api/experiments/{experiment.pk}/runs/")

    assert response.status_code == 503, response.content
    body: dict[str, Any] = response.json()
    assert set(body) == {"message", "extra"}
    run = Run.objects.get(pk=body["extra"]["run_id"])
    assert body["message"] == (
        f"The task queue (Redis at {dead}) is unreachable; the run was saved as 'not queued': launch it again "
        f"when the queue is back (POST /api/runs/{run.pk}/queue/ or the Queue again button on its page)."
    )
    assert run.status == "not_queued"
    assert "Connection refused" in run.error_message and f"/api/runs/{run.pk}/queue/" in run.error_message
    assert run.config == experiment.config | {"checkpoint": run.config["checkpoint"]}  # nothing lost
    assert RunEvent.objects.filter(run=run, kind="not_queued").exists()


def test_a_not_queued_run_is_queued_again_once_redis_is_back(
    api: Api, alice: User, experiment: Experiment, broker: Callable[[bool], str]
) -> None:
    broker(False)
    run_id = api(alice).post(f"/api/experiments/{experiment.pk}/runs/").json()["extra"]["run_id"]
    still_down = api(alice).post(f"/api/runs/{run_id}/queue/")
    assert still_down.status_code == 503 and still_down.json()["extra"]["run_id"] == run_id
    assert Run.objects.get(pk=run_id).status == "not_queued"

    broker(True)
    response = api(alice).post(f"/api/runs/{run_id}/queue/")

    assert response.status_code == 200, response.content
    run = Run.objects.get(pk=run_id)
    assert response.json()["status"] == run.status == "queued"
    assert run.error_message == "" and run.celery_task_id  # the task id the broker took


def test_only_a_not_queued_run_can_be_queued_again(api: Api, alice: User, run: Run) -> None:
    response = api(alice).post(f"/api/runs/{run.pk}/queue/")
    assert response.status_code == 409
    assert "only a run the task queue refused (not_queued) can be queued again" in response.json()["message"]


def test_a_viewer_cannot_queue_a_run_again(
    api: Api, bob: User, run: Run, join: Callable[[User, str | None], User]
) -> None:
    Run.objects.filter(pk=run.pk).update(status="not_queued")
    join(bob, "viewer")
    assert api(bob).post(f"/api/runs/{run.pk}/queue/").status_code == 403


def test_a_not_queued_run_can_be_cancelled(api: Api, alice: User, run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(status="not_queued")
    response = api(alice).post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


def test_an_evaluation_launched_while_redis_is_down_answers_503_and_is_marked_failed(
    api: Api, alice: User, project: Project, experiment: Experiment, broker: Callable[[bool], str]
) -> None:
    from tests.webapp.benchmarks.helpers import SMALL_BENCHMARK
    from webapp.benchmarks.models import EvalRun
    from webapp.benchmarks.services import benchmark_create

    benchmark = benchmark_create(project=project, actor=alice, name="addition", source="builtin",
                                 builtin="builtin:addition", config=dict(SMALL_BENCHMARK))  # fmt: skip
    dead = broker(False)
    response = api(alice).post(
        f"/api/benchmarks/{benchmark.pk}/evals/", {"experiments": [experiment.pk]}, format="json"
    )

    assert response.status_code == 503, response.content
    body = response.json()
    assert (
        set(body) == {"message", "extra"}
        and f"The task queue (Redis at {dead}) is unreachable" in body["message"]
    )
    row = EvalRun.objects.get(benchmark=benchmark)
    assert body["extra"]["unsent"] == [f"evaluation {row.pk}"]
    assert row.status == "failed" and "launch it again" in row.error_message


def test_a_verification_job_started_while_redis_is_down_answers_503_and_is_marked_failed(
    api: Api, alice: User, project: Project, broker: Callable[[bool], str]
) -> None:
    from webapp.verification.models import VerificationJob
    from webapp.verification.services import verifier_definition_create

    definition = verifier_definition_create(
        project=project, actor=alice, name="answer", verifier="exact", params={}
    )
    version = definition.versions.get(number=1)
    broker(False)
    response = api(alice).post(f"/api/verifier-versions/{version.pk}/audit/", {}, format="json")

    assert response.status_code == 503, response.content
    job = VerificationJob.objects.get(version=version)
    assert response.json()["extra"]["unsent"] == [f"verification job {job.pk}"]
    assert job.status == "failed" and "REDIS_URL" in job.error


def test_the_run_page_offers_queue_again_only_for_a_not_queued_run(alice: User, run: Run) -> None:
    from django.test import Client

    client = Client()
    client.force_login(alice)
    assert 'id="queue-again"' not in client.get(f"/runs/{run.pk}/").content.decode()
    Run.objects.filter(pk=run.pk).update(
        status="not_queued", error_message="Could not send the run to a worker"
    )
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="queue-again"' in page and "Could not send the run to a worker" in page
    assert 'name="csrfmiddlewaretoken"' in page  # the button's POST carries it
