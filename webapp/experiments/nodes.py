"""Runs over several hosts (``training.num_nodes`` > 1): the node rows, and how their tasks meet through the database.

Sending the run (webapp/experiments/dispatch.py) starts a new round and puts one node task per host on the
training queue. The first task to register for the round becomes the rendezvous host: it publishes its
advertised address as the endpoint (``node_register``), plans the start (resume point, rows dropped) and
marks itself ready with the checkpoint every node resumes from; the others read the endpoint and join
(workers/nodes.py). torchrun's c10d rendezvous does the rest (trainer/distributed/rendezvous.py). A task of an
earlier round, or a second delivery of a node task already registered, is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from webapp.experiments.models import FINISHED_STATUSES, NodeState, Run, RunNode
from webapp.experiments.storable import clean_text

MAX_LOG_TAIL_CHARS = 20_000


@dataclass(frozen=True)
class Registration:
    """A node task's place: its row, and the round's host row (itself when it hosts)."""

    node: RunNode
    host: RunNode


def run_num_nodes(run: Run) -> int:
    """How many hosts the run's config asks for (1 for a config without the field)."""
    return int((run.config.get("training") or {}).get("num_nodes") or 1)


def node_start_round(*, run_id: int) -> int:
    """A new round of node tasks for the run (a launch, resume or requeue sends one task per node)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.node_round += 1
        run.save(update_fields=["node_round"])
        return run.node_round


def node_register(
    *, run_id: int, round: int, index: int, name: str, address: str, endpoint: Callable[[], str]
) -> Registration | None:
    """Register node task ``index`` of ``round``; None when it must not train (an earlier round, a finished
    run, or a second delivery of a task already registered). The first of the round hosts the rendezvous at
    ``endpoint()``."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.node_round != round or run.status in FINISHED_STATUSES:
            return None
        if RunNode.objects.filter(run=run, round=round, index=index).exists():
            return None
        host = RunNode.objects.filter(run=run, round=round, is_host=True).first()
        node = RunNode.objects.create(
            run=run,
            round=round,
            index=index,
            name=name[:255],
            address=address[:255],
            is_host=host is None,
            endpoint=host.endpoint if host is not None else endpoint()[:300],
        )
        return Registration(node=node, host=host or node)


def node_mark_ready(*, node_id: int, resume_from: str | None) -> None:
    """The host planned the start: the others may join, resuming from ``resume_from`` (None: fresh)."""
    RunNode.objects.filter(pk=node_id).update(ready=True, resume_from=resume_from or "")


def node_host(*, run_id: int, round: int) -> RunNode | None:
    return RunNode.objects.filter(run_id=run_id, round=round, is_host=True).first()


def node_update(*, node_id: int, state: str, message: str = "", log_tail: str | None = None) -> None:
    """A node's state; ``log_tail`` (its torchrun and rank logs' last lines) shown on the run page."""
    fields: dict[str, str] = {"state": NodeState(state).value, "message": clean_text(message)[:5000]}
    if log_tail is not None:
        fields["log_tail"] = clean_text(log_tail)[-MAX_LOG_TAIL_CHARS:]
    RunNode.objects.filter(pk=node_id).update(**fields)


def node_log_tail(*, node_id: int, log_tail: str) -> None:
    """A training node's last log lines so far (stored every few seconds while it trains)."""
    RunNode.objects.filter(pk=node_id, state__in=(NodeState.JOINING, NodeState.TRAINING)).update(
        log_tail=clean_text(log_tail)[-MAX_LOG_TAIL_CHARS:]
    )


def node_membership(*, run_id: int, round: int, num_nodes: int) -> str:
    """Which node tasks had registered, and how many had not, for a rendezvous that timed out."""
    rows = list(RunNode.objects.filter(run_id=run_id, round=round).order_by("index"))
    joined = ", ".join(f"{n.name} ({n.address}{', host' if n.is_host else ''})" for n in rows) or "none"
    missing = num_nodes - len(rows)
    if missing <= 0:
        return f"joined: {joined}; every node task started, so one could not reach the rendezvous endpoint"
    return (
        f"joined: {joined}; did not join: {missing} of {num_nodes} node(s) (no training worker took their "
        "task)"
    )
