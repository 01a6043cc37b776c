"""Where a queued run, evaluation or verification job stands in its Celery queue, read from the database.

Redis holds the messages, but a message says nothing a page can show and reading a queue's length tells
nothing about one row. The rows are the truth instead: each table's rows go to one queue (runs ->
``training``, evaluations -> ``eval``, verification jobs -> ``default``; webapp/core/tasks_by_name.py), a
worker takes them oldest first, so what is ahead of a queued row is every running row of its table and every
queued row created before it (a smaller id). This counts every project's rows: the queue is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Model, Q, QuerySet
from rest_framework import serializers


@dataclass(frozen=True)
class QueuePosition:
    queue: str
    running: int  # rows a worker of this queue is busy with
    queued: int  # rows queued before this one

    @property
    def ahead(self) -> int:
        return self.running + self.queued

    def text(self) -> str:
        """``"2 ahead of it in the training queue (1 running, 1 queued)"``, or that it is next."""
        if not self.ahead:
            return f"next in the {self.queue} queue"
        return f"{self.ahead} ahead of it in the {self.queue} queue ({self.running} running, {self.queued} queued)"


class QueuePositionOut(serializers.Serializer[QueuePosition]):
    """A queued row's place in its queue, as the API shows it (null once the row left the queue)."""

    queue = serializers.CharField()
    ahead = serializers.IntegerField(help_text="Running plus earlier queued rows of the same queue.")
    running = serializers.IntegerField()
    queued = serializers.IntegerField()
    text = serializers.CharField(
        help_text='e.g. "2 ahead of it in the training queue (1 running, 1 queued)".'
    )


def queue_position(
    rows: QuerySet[Any], *, row: Model, queue: str, queued: str = "queued", running: str = "running"
) -> QueuePosition | None:
    """``row``'s position among ``rows`` (its table), or None unless ``row`` is queued."""
    if getattr(row, "status", None) != queued:
        return None
    counts = rows.exclude(pk=row.pk).filter(Q(status=running) | Q(status=queued, pk__lt=row.pk))
    n_running = counts.filter(status=running).count()
    return QueuePosition(queue=queue, running=n_running, queued=counts.count() - n_running)
