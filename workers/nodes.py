"""One node of a run over several hosts (``training.num_nodes`` > 1): ``run_training(run_id, round, index)``.

The first node task of a round to register hosts torchrun's c10d rendezvous on this worker's advertised
address (``RLVR_NODE_ADDRESS``; the port is ``RLVR_NODE_PORT`` or a free one), holds the run's lease, marks
the run started, plans where it starts (the last complete checkpoint, rows after it dropped, as on one host)
and publishes the resume point; the others wait for that (at most ``training.node_join_timeout_s``) and join.
Each then runs its torchrun agent (``train(..., node=...)``); the rendezvous itself times out after the same
time, so no task holds its devices waiting for a node that never comes. The node whose process is global
rank 0 records events, metrics and rollouts; any node whose ranks fail fails the run (the first failure is
the run's); each node stores its last log lines on its row for the run page, every few seconds while it
trains. Cancel reaches every node: each polls the run's cancel flag and tells its ranks (rank 0 stops them all
at the next step boundary).

A node that dies, as on one host: every node task holds a node lease (``rlvr:run-lease:<id>:node-<round>-<i>``,
refreshed every few seconds, visible to the sweep) besides the host's run lease. When a node's part fails, it
stores its failure on its row, then waits (at most the lease TTL and two heartbeats) until every other node of
the round has either stored its own outcome or let its lease expire. A node whose lease expired without an
outcome was lost (its worker killed, its host gone): the run is re-queued from its last checkpoint and a new
round of node tasks sent (``run_recover_stranded``, bounded by ``RLVR_MAX_ATTEMPTS``, as the sweep does for a
single-host run). When every node reported, the failure was the run's own (a bad config, a rank's error): the
run fails with the first node's message, as on one host. Should every node task die, the sweep finds the run
with no lease held and re-queues it the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workers.sink import DjangoRunSink

if TYPE_CHECKING:
    from webapp.experiments.models import Run, RunNode
    from webapp.experiments.nodes import Registration

logger = logging.getLogger(__name__)

POLL_S = 0.5
TAIL_LINES = 40
LOG_EVERY_S = 5.0


class NodeRunSink(DjangoRunSink):
    """``DjangoRunSink`` that keeps a failure for ``settle_failure`` instead of recording it on the run at once:
    whether it is the run's own failure or the sign of a lost node depends on what the other nodes report."""

    failure: tuple[str, str] | None = None

    def on_error(self, message: str, traceback_text: str) -> None:
        from trainer.verifiers.secrets import scrub

        self.close()
        self.failure = (scrub(message), scrub(traceback_text))
        self.finished = True


def run_fail_if_running(*, run_id: int, message: str, traceback_text: str) -> bool:
    """Fail the run unless another node already recorded its outcome (the first node's failure is the
    run's); whether this call failed it."""
    from django.db import transaction

    from webapp.experiments import services
    from webapp.experiments.models import Run, RunStatus

    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.status != RunStatus.RUNNING:
            return False
        services.run_fail(run_id=run_id, message=message, traceback_text=traceback_text)
    return True


def train_node(
    run_id: int, round_: int, index: int, me: str, prepare: Callable[..., Any], train: Callable[..., str]
) -> str:
    """This worker's part of the run; returns the outcome ('skipped' for a stale or duplicate task).
    ``prepare`` and ``train`` are the single-host task's own steps (workers/tasks.py ``plan_and_prepare`` and
    ``_train``), passed in so that the two modules do not import each other."""
    from trainer.distributed.rendezvous import advertised_address, endpoint_of, rendezvous_port
    from webapp.experiments.nodes import node_register

    address = advertised_address()
    registration = node_register(
        run_id=run_id,
        round=round_,
        index=index,
        name=me,
        address=address,
        endpoint=lambda: endpoint_of(address, rendezvous_port(address)),
    )
    if registration is None:
        logger.info(
            "run %s: dropping node task %s of round %s (stale or delivered twice)", run_id, index, round_
        )
        return "skipped"
    from webapp.experiments.run_lease import node_lease_key
    from workers.lease import Heartbeat, redis_client

    client = redis_client()
    node_lease = Heartbeat(run_id, me, client, key=node_lease_key(run_id, round_, index))
    node_lease.beat()  # held from now on: the other nodes and the sweep see this node alive
    with node_lease:
        sink = NodeRunSink(run_id)
        if registration.node.is_host:
            outcome = _host(run_id, registration, me, address, prepare, train, sink)
        else:
            outcome = _join(run_id, registration, address, train, sink)
        if sink.failure is None:
            return outcome
        return settle_failure(run_id, registration.node, sink.failure, client)


def _host(
    run_id: int,
    registration: Registration,
    me: str,
    address: str,
    prepare: Callable[..., Any],
    train: Callable[..., str],
    sink: NodeRunSink,
) -> str:
    """Hold the run's lease (cancel and the sweep see it alive), plan the start, publish it, train."""
    from webapp.experiments.nodes import node_mark_ready, node_update
    from workers.lease import Heartbeat, claim, redis_client

    client = redis_client()
    if claim(run_id, me, client) is None:
        node_update(node_id=registration.node.pk, state="failed", message="another worker holds the run")
        return "skipped"
    with Heartbeat(run_id, me, client):
        prepared = prepare(run_id, me)
        if isinstance(prepared, str):  # finished, cancelled or failed before training
            node_update(node_id=registration.node.pk, state="failed", message=f"did not start: {prepared}")
            return prepared
        node_mark_ready(node_id=registration.node.pk, resume_from=prepared.resume_from)
        args = (prepared.config_data, prepared.resume_from, prepared.shown_as, prepared.judge_secrets)
        return _train_here(run_id, registration.node, registration.host, address, train, args, sink)


def _join(
    run_id: int, registration: Registration, address: str, train: Callable[..., str], sink: NodeRunSink
) -> str:
    """Wait for the host's plan (bounded by the join timeout), then train from the same resume point."""
    from webapp.experiments import selectors
    from webapp.experiments.config_paths import references, run_config_for_worker
    from webapp.experiments.models import FINISHED_STATUSES
    from webapp.experiments.nodes import node_host, node_update

    run = selectors.run_get(run_id=run_id)
    timeout = int((run.config.get("training") or {}).get("node_join_timeout_s") or 600)
    deadline = time.monotonic() + timeout
    host = registration.host
    while not host.ready:
        run = selectors.run_get(run_id=run_id)
        if run.status in FINISHED_STATUSES or time.monotonic() > deadline:
            why = (
                f"the run is {run.status}" if run.status in FINISHED_STATUSES else "the host never got ready"
            )
            node_update(node_id=registration.node.pk, state="failed", message=f"did not join: {why}")
            return "skipped"
        time.sleep(POLL_S)
        host = node_host(run_id=run_id, round=registration.node.round) or host
    run = selectors.run_get(run_id=run_id)
    try:  # checked again on this worker: its allow-lists (RLVR_ROLLOUT_SERVERS, ...) and model roots
        config_data = run_config_for_worker(run=run)
        secrets = _judge_secrets(run, config_data)
    except Exception as err:  # the node cannot take part: the run fails, saying why, as on one host
        from trainer.verifiers.secrets import scrub
        from workers.failures import describe_failure

        message, trace = describe_failure(err, f"run {run_id}")
        message = f"node {registration.node.name}: {scrub(message)}"
        node_update(node_id=registration.node.pk, state="failed", message=message)
        run_fail_if_running(run_id=run_id, message=message, traceback_text=scrub(trace))
        return "failed"
    args = (config_data, host.resume_from or None, references(run.config, config_data), secrets)
    return _train_here(run_id, registration.node, host, address, train, args, sink)


def _judge_secrets(run: Run, config_data: dict[str, Any]) -> dict[str, str]:
    from webapp.rewards.selectors import judge_secrets_for_config

    return judge_secrets_for_config(project=run.experiment.project, config=config_data)


def _train_here(
    run_id: int,
    node: RunNode,
    host: RunNode,
    address: str,
    train: Callable[..., str],
    args: tuple[dict[str, Any], str | None, dict[str, str] | None, dict[str, str] | None],
    sink: NodeRunSink,
) -> str:
    """Run this node's torchrun agent (``train``: workers/tasks.py ``_train``, with ``args`` = config, resume
    point, references, judge secrets); record the node's state and log lines while it runs and whatever
    happens (a failure's message too: the other nodes read it in ``settle_failure``)."""
    from trainer.distributed.rendezvous import NodeSpec
    from webapp.experiments.nodes import node_membership, node_update

    config_data = args[0]

    training = config_data.get("training") or {}
    num_nodes = int(training.get("num_nodes") or 1)
    spec = NodeSpec(
        num_nodes=num_nodes,
        endpoint=host.endpoint,
        rdzv_id=f"run-{run_id}-round-{node.round}",
        is_host=node.is_host,
        name=node.name,
        local_addr=address,
        join_timeout_s=int(training.get("node_join_timeout_s") or 600),
        membership=lambda: node_membership(run_id=run_id, round=node.round, num_nodes=num_nodes),
    )
    node_update(node_id=node.pk, state="training")
    workdir = Path(str(config_data["checkpoint"]["output_dir"])) / "distributed" / spec.workdir_name()
    outcome = "failed"
    try:
        with LogPump(node.pk, workdir):
            outcome = train(run_id, *args, node=spec, sink=sink)
    finally:
        state = "finished" if outcome in ("succeeded", "cancelled") else "failed"
        message = sink.failure[0] if sink.failure is not None else outcome
        try:
            node_update(node_id=node.pk, state=state, message=message, log_tail=node_logs(workdir))
        except Exception:  # the other nodes then see this one by its lease alone
            logger.exception("run %s: could not store node %s's outcome and log lines", run_id, node.name)
    return outcome


class LogPump:
    """Stores the node's last log lines on its row every ``LOG_EVERY_S`` while it trains (the run page shows
    them live), in a daemon thread; the final lines are stored by ``_train_here``."""

    def __init__(self, node_id: int, workdir: Path) -> None:
        self.node_id, self.workdir = node_id, workdir
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"node-logs-{node_id}", daemon=True)

    def _run(self) -> None:
        from django.db import connection

        from webapp.experiments.nodes import node_log_tail

        try:
            while not self._stop.wait(LOG_EVERY_S):
                try:
                    node_log_tail(node_id=self.node_id, log_tail=node_logs(self.workdir))
                except Exception as err:  # a courtesy: training goes on
                    logger.warning("node %s: could not store its log lines (%s)", self.node_id, err)
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> LogPump:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=LOG_EVERY_S + 5)


def settle_failure(run_id: int, node: RunNode, failure: tuple[str, str], client: Any) -> str:
    """This node's part failed: decide, with the other nodes of its round, whether the run failed (every node
    reported: fail it with the first report) or a node was lost (its lease expired without a report:
    re-queue the run from its last checkpoint on a new round of node tasks). Returns this task's outcome."""
    from django.conf import settings

    from webapp.experiments.dispatch import enqueue_training
    from webapp.experiments.models import RunNode
    from webapp.experiments.services import run_recover_stranded

    message, traceback_text = failure
    lost = _lost_peers(run_id, node, client)
    if lost:
        names = ", ".join(f"{n.name} ({n.address})" for n in lost)
        reason = (
            f"Node {names} of round {node.round} stopped without reporting (its worker or host was lost); "
            f"node {node.name} saw: {message.splitlines()[0][:300]}"
        )
        outcome = run_recover_stranded(
            run_id=run_id, reason=reason, max_attempts=int(settings.RLVR_MAX_ATTEMPTS)
        )
        if outcome == "requeued":
            enqueue_training(run_id)  # a new round of num_nodes node tasks
        logger.warning("run %s lost node(s) %s: %s", run_id, names, outcome or "already settled")
        return "requeued" if outcome == "requeued" else "failed"
    reported = RunNode.objects.filter(run_id=run_id, round=node.round, state="failed").order_by("updated_at")
    first = reported.first()
    if first is not None and first.pk != node.pk and first.message:  # the node that failed first says why
        message, traceback_text = first.message, f"(the traceback is in node {first.name}'s log above)"
    run_fail_if_running(run_id=run_id, message=message, traceback_text=traceback_text)
    return "failed"


def _lost_peers(run_id: int, node: RunNode, client: Any) -> list[RunNode]:
    """The other nodes of ``node``'s round that neither reported an outcome nor hold their lease, once each
    of them did one or the other (waiting at most a lease's lifetime); a node that never registered is a
    join failure, not a loss."""
    from webapp.experiments.models import RunNode
    from webapp.experiments.run_lease import node_lease_key
    from workers.lease import HEARTBEAT_S, TTL_S

    deadline = time.monotonic() + TTL_S + 2 * HEARTBEAT_S
    while True:
        peers = RunNode.objects.filter(run_id=run_id, round=node.round).exclude(pk=node.pk)
        pending = [p for p in peers if p.state in ("joining", "training")]
        lost = [p for p in pending if client.get(node_lease_key(run_id, p.round, p.index)) is None]
        if lost or not pending or time.monotonic() > deadline:
            return lost  # at the deadline: alive but silent peers; the run fails with this node's report
        time.sleep(POLL_S)


def node_logs(workdir: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of this node's torchrun log and of each of its ranks' logs."""
    parts = []
    for log in [workdir / "torchrun.log", *sorted(workdir.glob("rank*.log"))]:
        if log.exists():
            text = log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            parts += [f"--- {log.name} ---", *text]
    return "\n".join(parts)
