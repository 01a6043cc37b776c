"""Celery tasks. They take ids, import the trainer inside their body (the web process imports this module
to enqueue and must never load torch) and record everything through webapp services."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from celery import Task

from workers.celery_app import app
from workers.failures import describe_failure

if TYPE_CHECKING:
    from trainer.distributed.rendezvous import NodeSpec
    from workers.sink import DjangoRunSink

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """Where an attempt starts and what it trains with, once the run is marked started."""

    config_data: dict[str, Any]
    resume_from: str | None
    shown_as: dict[str, str] | None
    judge_secrets: dict[str, str] | None


@app.task(bind=True, acks_late=True, reject_on_worker_lost=True, name="workers.tasks.run_training")
def run_training(
    self: Task[Any, Any], run_id: int, node_round: int | None = None, node_index: int | None = None
) -> str:
    """Train run ``run_id`` to its end and record it; returns the outcome (or 'skipped' for a duplicate).

    A delivery after an interrupted attempt (worker killed, run re-queued) resumes from the run's last
    checkpoint and first deletes what was stored after it, so every step is stored exactly once.
    With ``node_round`` and ``node_index`` (a run over ``training.num_nodes`` hosts) this task is one node of
    it: workers/nodes.py.
    """
    from webapp.experiments.models import FINISHED_STATUSES
    from webapp.experiments.selectors import run_get
    from workers.db_retry import with_db_retry
    from workers.lease import Heartbeat, claim, redis_client

    me = str(self.request.hostname or "")
    if node_round is not None and node_index is not None:
        from workers.nodes import train_node

        return train_node(run_id, node_round, node_index, me, plan_and_prepare, _train)
    # A message that arrives while the database restarts waits for it (acks_late would not send it again).
    status = with_db_retry(lambda: run_get(run_id=run_id).status, f"reading run {run_id}")
    if status in FINISHED_STATUSES:  # a requeue and a re-delivery of the same run both arrived
        logger.info("run %s: dropping a second delivery: the run is already %s", run_id, status)
        return "skipped"
    client = redis_client()
    try:
        holds = claim(run_id, me, client) is not None
    except Exception as err:  # cannot tell: train rather than leave the run queued
        logger.warning("run %s: could not claim its lease (%s); training without it", run_id, err)
        holds = True
    if not holds:
        logger.info("run %s: dropping a second delivery: a live worker holds its lease", run_id)
        return "skipped"
    with Heartbeat(run_id, me, client):
        return _start_and_train(run_id, me)


def _start_and_train(run_id: int, me: str) -> str:
    """Mark the run started, decide where it starts (fresh or a checkpoint), drop rows past that, train."""
    prepared = plan_and_prepare(run_id, me)
    if isinstance(prepared, str):
        return prepared
    return _train(
        run_id, prepared.config_data, prepared.resume_from, prepared.shown_as, prepared.judge_secrets
    )


def plan_and_prepare(run_id: int, me: str) -> Prepared | str:
    """Mark the run started and plan its start; the outcome instead when it must not train ('skipped',
    'cancelled', 'failed'). Also the host node's first part in a run over several hosts (workers/nodes.py)."""
    from webapp.experiments import selectors, services
    from webapp.experiments.config_paths import references, run_config_for_worker
    from webapp.rewards.selectors import judge_secrets_for_config
    from workers.recovery import plan_start

    before = selectors.run_get(run_id=run_id)
    if before.is_external:  # sent in through the ingest API: trained elsewhere, never by a worker of ours
        logger.warning("run %s: dropping a delivery of an outside run (%s)", run_id, before.source)
        return "skipped"
    earlier_attempt = before.attempts > 0 or before.status == "running"
    run = services.run_mark_started(run_id=run_id, worker=me)
    if run.status != "running":  # cancelled while queued
        return "skipped"
    if run.cancel_requested:
        services.run_finish(run_id=run_id, status="cancelled", final_metrics={})
        return "cancelled"
    try:
        plan = plan_start(
            resume_from=run.resume_from,
            earlier_attempt=earlier_attempt,
            stored_step=run.step,
            checkpoints=[(c.step, c.path) for c in selectors.checkpoints_for_run(run=run)],
        )
    except Exception as err:
        return _fail(run_id, err)
    if plan.truncate:
        services.run_truncate_after(run_id=run_id, step=plan.step)
    # Written now, not when the run was marked started: the checkpoints decide where this attempt begins.
    services.run_log_attempt(run_id=run_id, plan=plan.note, step=plan.step, resumed=plan.truncate)
    try:
        config_data = run_config_for_worker(
            run=run
        )  # checked again here, references resolved to server paths
        # The API keys its judges name, decrypted here and handed only to the scoring process (and its ranks).
        judge_secrets = judge_secrets_for_config(project=run.experiment.project, config=config_data)
    except Exception as err:
        return _fail(run_id, err)
    return Prepared(config_data, plan.resume_from, references(run.config, config_data), judge_secrets)


def _train(
    run_id: int,
    config_data: dict[str, Any],
    resume_from: str | None,
    shown_as: dict[str, str] | None = None,
    judge_secrets: dict[str, str] | None = None,
    node: NodeSpec | None = None,
    sink: DjangoRunSink | None = None,
) -> str:
    """``shown_as``: server path -> the reference the user wrote (``dataset:<id>``), for error messages.
    ``judge_secrets``: ``{name: value}`` for the config's judges, provided to this process for the run only (and,
    for ``training.num_processes`` > 1, to the child ranks through their environment, ``secret_env``)."""
    from trainer.config import config_from_dict
    from trainer.sinks import MultiSink
    from trainer.step.loop import train
    from trainer.verifiers.secrets import forget_secrets, provide_secrets, scrub, secret_env
    from webapp.experiments import services
    from workers.shared_cores import SharedCoresWatch
    from workers.sink import DjangoRunSink, StopPoller

    sink = sink or DjangoRunSink(run_id)

    def log(message: str) -> None:
        """The trainer's few notes (memory plan, resume point, process launch) go to the run's event log."""
        message = scrub(message)  # a judge's API key never reaches a log line or an event
        logger.info("run %s: %s", run_id, message)
        try:
            services.run_log_event(run_id=run_id, level="info", kind="trainer", message=message[:2000])
        except Exception:  # a note must never fail the run
            logger.exception("run %s: could not record a trainer note", run_id)

    try:
        provide_secrets(judge_secrets or {})
        ranks = int((config_data.get("training") or {}).get("num_processes") or 1)
        with _environment(secret_env(judge_secrets or {}) if ranks > 1 or node is not None else {}):
            config = config_from_dict(config_data, source=f"run {run_id}")
            # SharedCoresWatch: a warning event when a model build shares this machine's cores
            result = train(
                config,
                sink=MultiSink([sink, SharedCoresWatch(run_id)]),
                should_stop=StopPoller(run_id),
                resume_from=resume_from,
                log=log,
                # a joining node never clears the output directory the host already claimed
                overwrite_output_dir=resume_from is None and (node is None or node.is_host),
                node=node,
            )
    except Exception as err:
        if sink.finished:  # the trainer already reported it through the sink
            return "failed"
        return _fail(run_id, err, shown_as)
    finally:
        sink.close()  # the step writer's thread, should the trainer have stopped without on_end / on_error
        forget_secrets()
    return result.status


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in os.environ while the block runs (the distributed launcher copies it to the ranks), then
    the environment as it was."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in before.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def _fail(run_id: int, err: Exception, shown_as: dict[str, str] | None = None) -> str:
    """Record an error the sink did not see (raised before training began, or the sink's own failure
    record). A trainer ``RLVRError`` is meant for the user and shown as it is; anything else is a bug and
    keeps its traceback. Server paths the config resolved (an upload's file) are shown as the user named
    them (``dataset:<id>``).

    The write rides through a database outage; after one that already outlasted the retry window
    (DatabaseUnavailable) it is tried once more only, and if that fails too the run is left ``running``:
    the task ends, its lease is released, and the sweep (workers/sweep.py) recovers the run."""
    from trainer.verifiers.secrets import scrub
    from webapp.experiments import services
    from workers.db_retry import DatabaseUnavailable, with_db_retry
    from workers.sink import database_lost_message

    if isinstance(err, DatabaseUnavailable):
        message, trace = database_lost_message(err), ""
    else:
        message, trace = describe_failure(err, f"run {run_id}")
    for path, reference in (shown_as or {}).items():
        message, trace = message.replace(path, reference), trace.replace(path, reference)
    message, trace = scrub(message), scrub(trace)  # a judge's API key never reaches the run's page
    window = 0.0 if isinstance(err, DatabaseUnavailable) else None
    try:
        with_db_retry(
            lambda: services.run_fail(run_id=run_id, message=message, traceback_text=trace),
            f"recording the failure of run {run_id}",
            window_s=window,
        )
    except DatabaseUnavailable:
        logger.error(
            "run %s: could not record its failure; the sweep will recover it once the database is back",
            run_id,
        )
    return "failed"
