"""send_after_commit: the task goes out only once the rows it reads are committed, and a broker that refuses
it is recorded through ``on_failure`` and then reported to the caller as QueueUnavailable (503)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction
from pytest_django import Settings

from webapp.core.dispatch import QueueUnavailable, broker_description, send_after_commit

pytestmark = pytest.mark.django_db(transaction=True)


def refuse() -> Any:
    raise ConnectionError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")


def test_the_task_is_sent_after_commit_and_not_on_rollback() -> None:
    sent: list[str] = []
    with transaction.atomic():
        send_after_commit(lambda: sent.append("a"), lambda err: None, "a")
        assert sent == []  # a worker must not see an uncommitted id
    assert sent == ["a"]
    with pytest.raises(RuntimeError), transaction.atomic():
        send_after_commit(lambda: sent.append("b"), lambda err: None, "b")
        raise RuntimeError("the request failed")
    assert sent == ["a"]


def test_a_refused_send_is_recorded_then_raised_as_queue_unavailable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[Exception] = []
    record: Callable[[Exception], None] = failures.append
    with pytest.raises(QueueUnavailable) as raised, transaction.atomic():
        send_after_commit(refuse, record, "run 7", extra={"run_id": 7})
    assert [type(e) for e in failures] == [ConnectionError]  # recorded on the row before the client hears
    assert raised.value.status_code == 503
    assert raised.value.extra == {"run_id": 7, "unsent": ["run 7"]}
    assert "is unreachable" in raised.value.message and "run 7 was saved but not sent" in raised.value.message
    assert "could not enqueue run 7" in caplog.text


def test_every_send_of_a_commit_is_tried_before_the_refusal_is_raised() -> None:
    sent: list[str] = []
    failed: list[str] = []
    with pytest.raises(QueueUnavailable) as raised, transaction.atomic():
        send_after_commit(refuse, lambda err: failed.append("a"), "evaluation 1")
        send_after_commit(lambda: sent.append("b"), lambda err: failed.append("b"), "evaluation 2")
        send_after_commit(refuse, lambda err: failed.append("c"), "evaluation 3")
    assert sent == ["b"] and failed == ["a", "c"]
    assert raised.value.extra["unsent"] == ["evaluation 1", "evaluation 3"]


def test_a_send_outside_a_transaction_raises_at_once() -> None:
    with pytest.raises(QueueUnavailable):
        send_after_commit(refuse, lambda err: None, "verification job 4")


def test_the_next_commit_starts_a_new_batch_after_a_refusal() -> None:
    with pytest.raises(QueueUnavailable), transaction.atomic():
        send_after_commit(refuse, lambda err: None, "run 1")
    sent: list[str] = []
    with transaction.atomic():
        send_after_commit(lambda: sent.append("run 2"), lambda err: None, "run 2")
    assert sent == ["run 2"]


def test_the_broker_is_named_without_its_password(settings: Settings) -> None:
    settings.REDIS_URL = "redis://default:s3cret@redis.internal:6380/2"
    assert broker_description() == "Redis at redis://default:***@redis.internal:6380/2"
    settings.REDIS_URL = "redis://:s3cret@redis.internal:6380/2"
    assert broker_description() == "Redis at redis://***@redis.internal:6380/2"
