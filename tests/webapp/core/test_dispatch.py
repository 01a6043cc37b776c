"""send_after_commit: the task goes out only once the rows it reads are committed, and a broker that refuses
it is reported through ``on_failure`` instead of raising into the request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from webapp.core.dispatch import send_after_commit

pytestmark = pytest.mark.django_db(transaction=True)


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


def test_a_refused_send_is_reported_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    failures: list[Exception] = []

    def refuse() -> Any:
        raise ConnectionError("Redis is down")

    record: Callable[[Exception], None] = failures.append
    with transaction.atomic():
        send_after_commit(refuse, record, "run 7")
    assert [str(e) for e in failures] == ["Redis is down"]
    assert "could not enqueue run 7" in caplog.text
