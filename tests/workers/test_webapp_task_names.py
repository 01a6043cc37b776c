"""The web side sends worker tasks by name (webapp/core/tasks_by_name.py): each name must be one the worker
registers, on the queue the worker reads, and the message must be the one ``task.apply_async`` sends."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import clear_queues, redis_reachable, redis_url
from webapp.core.tasks_by_name import SENT_BY_WEBAPP, WorkerTask
from workers.celery_app import app

REPO = Path(__file__).resolve().parents[2]

# What the web process runs: send every task by name, then show whether the worker package was imported.
WEB_SENDER = """
import sys
import django
django.setup()
from webapp.core.tasks_by_name import SENT_BY_WEBAPP, send
for task in SENT_BY_WEBAPP:
    send(task, 7)
print("WORKERS:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "workers")))
"""


@pytest.fixture
def redis() -> Iterator[str]:
    missing = pytest.fail if os.environ.get("RLVR_REQUIRE_SERVICES") else pytest.skip
    url = redis_url()
    if not redis_reachable(url):
        missing(f"this test needs Redis at REDIS_URL ({url})")
    clear_queues(url)
    yield url
    clear_queues(url)


def take_messages(url: str, queue: str) -> list[dict[str, Any]]:
    """The messages waiting in ``queue``, removed from it, with the per-message ids blanked."""
    import redis as redis_client

    client = redis_client.Redis.from_url(url)
    raw: list[bytes] = client.lrange(queue, 0, -1)  # type: ignore[assignment]  # a sync client
    client.delete(queue)
    messages = []
    for item in raw:
        message = json.loads(item)
        for part in (message["headers"], message["properties"]):
            for key in ("id", "root_id", "correlation_id", "delivery_tag", "origin", "reply_to"):
                part.pop(key, None)
        message["body"] = json.loads(base64.b64decode(message["body"]))
        messages.append(message)
    return messages


@pytest.mark.parametrize("task", SENT_BY_WEBAPP, ids=lambda task: task.name)
def test_each_task_the_webapp_sends_is_registered_by_the_worker_on_that_queue(task: WorkerTask) -> None:
    app.loader.import_default_modules()  # what ``celery worker`` imports at start-up
    registered = app.tasks[task.name]
    assert registered.name == task.name
    assert app.amqp.router.route({}, task.name)["queue"].name == task.queue
    assert registered.acks_late and registered.reject_on_worker_lost
    assert registered.ignore_result  # tasks_by_name.send sets the same header


def test_the_web_process_sends_the_messages_apply_async_sent_without_importing_workers(redis: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "REDIS_URL": redis}
    result = subprocess.run(
        [sys.executable, "-c", WEB_SENDER], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "WORKERS:\n" in result.stdout, f"the web process imported {result.stdout.strip()}"
    queues = sorted({task.queue for task in SENT_BY_WEBAPP})  # several tasks may share a queue (default)
    by_name = {queue: take_messages(redis, queue) for queue in queues}

    app.loader.import_default_modules()
    for task in SENT_BY_WEBAPP:
        app.tasks[task.name].apply_async(args=(7,), queue=task.queue)
    by_task = {queue: take_messages(redis, queue) for queue in queues}

    sent_to = {queue: sum(1 for task in SENT_BY_WEBAPP if task.queue == queue) for queue in queues}
    assert {queue: len(messages) for queue, messages in by_name.items()} == sent_to, by_name
    assert by_name == by_task
