"""``start_run`` and ``IngestRun``: log an outside run to RLVR Studio in a few calls, as W&B takes one.

    run = start_run(project="math", name="qwen-grpo", config=vars(args), source="script")
    run.log_metrics(step, {"rollout/reward_mean": 0.4})
    run.log_rollouts(step, [{"group": 0, "sample_index": 0, "prompt": ..., "completion": ..., ...}])
    run.log_checkpoint(step, "s3://bucket/ckpt/step-100")
    run.finish("succeeded")

The calls only queue: a background thread cuts the queue into batches (every ``flush_interval_s``, or
sooner when a batch is big), writes each batch to the spool (rlvr_client/spool.py) and sends
the spool in order. While the server is unreachable the batches wait on disk and the thread keeps
trying with backoff; ``rlvr sync`` sends what a finished or crashed process left behind. The server
applies every batch idempotently, so a batch sent twice changes nothing. A hard kill can lose only what
was queued in the last ``flush_interval_s`` and not yet written to the spool.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_client.client import ClientError, load_credentials, normalize_url
from rlvr_client.command_line import command_to_send, redact_command
from rlvr_client.spool import RunSpool, SpooledBatch, check_key, default_spool_dir, spooled_keys
from rlvr_client.transport import (
    Backoff,
    Refused,
    TooLarge,
    Transport,
    Unreachable,
    send_with_retries,
)
from rlvr_client.wire import (
    FINISH_STATUSES,
    SOURCES,
    WIRE_VERSION,
    IngestError,
    check_rollout,
    check_step,
    clean_rollout,
    clean_values,
    plain_json,
)

logger = logging.getLogger("rlvr.ingest")
CLIENT_VERSION = "1"
# A batch is cut at whichever comes first; the server's own limits (webapp/ingest/schema.py) are higher.
BATCH_ROLLOUTS = 64
BATCH_TOKENS = 131_072
BATCH_METRIC_POINTS = 2_000
ELAPSED_KEY = (
    "perf/elapsed_s"  # the run page's wall-clock x-axis (trainer/step/progress.py logs it for native runs)
)


@dataclass
class _Queue:
    metrics: list[dict[str, Any]] = field(default_factory=list)
    rollouts: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    finish: dict[str, Any] | None = None
    tokens: int = 0
    announce: bool = False  # send a batch naming only the run (start_run's first, so the run appears at once)

    def empty(self) -> bool:
        return not (self.metrics or self.rollouts or self.checkpoints or self.finish or self.announce)

    def full(self) -> bool:
        return (
            len(self.rollouts) >= BATCH_ROLLOUTS
            or self.tokens >= BATCH_TOKENS
            or len(self.metrics) >= BATCH_METRIC_POINTS
        )


def _jsonable(item: dict[str, Any]) -> dict[str, Any]:
    """What the sender could not convert, in a form the spool can still write (for a person to read)."""
    return {
        key: value if isinstance(value, (str, int, bool, type(None))) else repr(value)[:10_000]
        for key, value in item.items()
    }


def resolve_server(url: str | None, token: str | None) -> tuple[str, str]:
    """The server and token: the arguments, else $RLVR_URL / $RLVR_TOKEN, else `rlvr login`'s credentials."""
    url = url or os.environ.get("RLVR_URL")
    token = token or os.environ.get("RLVR_TOKEN")
    if not (url and token):
        try:
            creds = load_credentials()
        except ClientError as err:
            raise IngestError(f"{err} (or set RLVR_URL and RLVR_TOKEN)") from None
        url, token = url or creds.url, token or creds.token
    try:
        return normalize_url(url), token
    except ClientError as err:
        raise IngestError(str(err)) from None


class IngestRun:
    """One outside run being logged. Thread-safe; every method returns at once (``flush`` and ``finish`` wait)."""

    def __init__(
        self,
        *,
        run: dict[str, Any],
        transport: Transport,
        spool: RunSpool,
        flush_interval_s: float = 1.0,
        attempts: int = 4,
        backoff: Backoff | None = None,
        retry_interval_s: float = 5.0,
        announce: bool = True,
        stamp_elapsed: bool = True,
    ) -> None:
        self.run = run
        self.transport = transport
        self.spool = spool
        self.flush_interval_s = flush_interval_s
        self.attempts = attempts
        self.backoff = backoff or Backoff()
        self.retry_interval_s = retry_interval_s
        self.run_id: int | None = (spool.read_run() or {}).get("run_id")
        self.started = time.monotonic()  # perf/elapsed_s counts from here
        self.stamp_elapsed = stamp_elapsed  # False: the steps happened earlier (``rlvr import``), not now
        self.rejections: list[str] = []
        # Rollouts the server refused for good (moved to rejected/), this run's earlier processes included: sent
        # with every later batch, so the run shows them (never a silent success).
        self.rollouts_dropped = spool.rejected_rollouts()
        self.offline = False
        self._queue = _Queue(announce=announce)
        self._lock = threading.Condition()
        self._flush_wanted = False
        self._closing = False
        self._busy = False  # the sender is spooling or sending what it cut from the queue
        self._thread = threading.Thread(target=self._loop, name=f"rlvr-ingest-{run['key']}", daemon=True)
        self._thread.start()
        atexit.register(self._at_exit)

    # --- what users call ---------------------------------------------------------------------------

    @property
    def key(self) -> str:
        return str(self.run["key"])

    @property
    def page_url(self) -> str | None:
        return None if self.run_id is None else f"{self.transport.url}/runs/{self.run_id}/"

    def log_metrics(self, step: int, values: Mapping[str, Any]) -> None:
        """Queue one step's metrics, with ``perf/elapsed_s`` (seconds since ``start_run``) added unless the
        caller sent its own: a run that continues an earlier one (the same ``key``) should send it, counted
        from the first start, or its wall-clock axis starts again at 0."""
        checked = check_step(step, "log_metrics")
        clean = clean_values(values, f"log_metrics(step={step})")
        if self.stamp_elapsed:
            clean.setdefault(ELAPSED_KEY, round(time.monotonic() - self.started, 3))
        point = {"step": checked, "values": clean}
        self._put(lambda q: q.metrics.append(point))

    def log_rollouts(self, step: int, rollouts: Sequence[Mapping[str, Any]]) -> None:
        """Queue one step's rollouts. Checked here for shape only (fields, slots, lengths: cheap on the training
        thread); their values are converted on the sender thread, where a bad one is logged and kept in the
        spool's rejected/ folder. The arrays are read then, not now: pass lists, or arrays you do not change
        afterwards."""
        check_step(step, "log_rollouts")
        payloads = [check_rollout(step, r, f"log_rollouts(step={step})[{i}]") for i, r in enumerate(rollouts)]

        def add(queue: _Queue) -> None:
            for payload in payloads:
                queue.rollouts.append(payload)
                queue.tokens += len(payload.get("tokens") or payload.get("token_ids") or ())

        self._put(add)

    def log_checkpoint(self, step: int, uri: str) -> None:
        if not isinstance(uri, str) or not uri:
            raise IngestError(
                "log_checkpoint: uri must be a non-empty string (a folder or an object-store URI)"
            )
        point = {"step": check_step(step, "log_checkpoint"), "uri": uri}
        self._put(lambda q: q.checkpoints.append(point))

    def finish(
        self,
        status: str = "succeeded",
        final_metrics: Mapping[str, Any] | None = None,
        error_message: str = "",
        timeout_s: float | None = 120.0,
    ) -> bool:
        """Queue the outcome, send everything, stop the thread. True when the server has it all; False when
        batches wait in the spool (a warning says where, and ``rlvr sync`` sends them later) or when the server
        refused rollouts (``rollouts_dropped`` counts them; the run shows the count beside its status)."""
        if status not in FINISH_STATUSES:
            raise IngestError(f"finish: status must be one of {', '.join(FINISH_STATUSES)}, got {status!r}")
        outcome = {
            "status": status,
            "final_metrics": clean_values(final_metrics or {}, "finish"),
            "error_message": str(error_message)[:10_000],
        }

        def add(queue: _Queue) -> None:
            queue.finish = outcome

        self._put(add)
        delivered = self.flush(timeout_s)
        self.close()
        if self.rollouts_dropped:
            logger.error(
                "RLVR Studio: %d rollout(s) of run %s could not be delivered (kept in %s with the reasons); the "
                "run shows the count",
                self.rollouts_dropped,
                self.key,
                self.spool.dir / "rejected",
            )
        return delivered and not self.rollouts_dropped

    def flush(self, timeout_s: float | None = None, *, stop_when_offline: bool = False) -> bool:
        """Wait until everything queued so far is written to the spool and sent; False if batches still
        wait (the server is unreachable) when ``timeout_s`` runs out."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            self._flush_wanted = True
            self._lock.notify_all()
            while not (
                self._queue.empty()
                and not self._busy
                and (self.spool.is_empty() or (stop_when_offline and self.offline))
            ):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._lock.wait(timeout=0.2 if left is None else min(left, 0.2))
            self._flush_wanted = False
        delivered = self.spool.is_empty()
        if not delivered:
            logger.warning(
                "RLVR Studio: %d batch(es) of run %s wait in %s (the server is unreachable); they are sent when it "
                "answers, or later with `rlvr sync`",
                len(self.spool.pending()),
                self.key,
                self.spool.dir,
            )
        return delivered

    def close(self) -> None:
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._thread.join(timeout=30)
        self.transport.close()

    # --- the sender thread ---------------------------------------------------------------------------

    def _put(self, change: Any) -> None:
        with self._lock:
            if self._closing:
                raise IngestError(f"run {self.key} is finished: start a new run to log more")
            change(self._queue)
            if self._queue.full():
                self._lock.notify_all()

    def _cut(self) -> dict[str, Any] | None:
        """The next batch: at most BATCH_ROLLOUTS rollouts (or BATCH_TOKENS tokens) and BATCH_METRIC_POINTS
        points, whatever one call logged (a verl step can hold thousands); the rest waits for the next cut.
        The outcome goes with the last one."""
        queue = self._queue
        if queue.empty():
            return None
        rollouts: list[dict[str, Any]] = []
        tokens = 0
        while queue.rollouts and len(rollouts) < BATCH_ROLLOUTS and (not rollouts or tokens < BATCH_TOKENS):
            rollout = queue.rollouts.pop(0)
            rollouts.append(rollout)
            tokens += len(rollout.get("tokens") or rollout.get("token_ids") or ())
        queue.tokens = max(0, queue.tokens - tokens)
        metrics, queue.metrics = queue.metrics[:BATCH_METRIC_POINTS], queue.metrics[BATCH_METRIC_POINTS:]
        checkpoints, queue.checkpoints = queue.checkpoints, []
        queue.announce = False
        batch: dict[str, Any] = {"version": WIRE_VERSION, "run": self.run}
        for name, items in (("metrics", metrics), ("rollouts", rollouts), ("checkpoints", checkpoints)):
            if items:
                batch[name] = items
        if queue.finish is not None and not (queue.rollouts or queue.metrics):
            batch["finish"], queue.finish = queue.finish, None
        return batch

    def _loop(self) -> None:
        next_retry = 0.0
        while True:
            with self._lock:
                urgent = (
                    self._closing or self._queue.full() or (self._flush_wanted and not self._queue.empty())
                )
                if not urgent:
                    self._lock.wait(timeout=self.flush_interval_s)
                closing, flushing = self._closing, self._flush_wanted
                batch = self._cut()
                self._busy = True
            try:
                if batch is not None:
                    self._spool_batch(batch)
                if not self.offline or time.monotonic() >= next_retry or closing:
                    self._drain(closing)
                    if self.offline:  # someone waiting in flush() hears sooner that the server is back
                        next_retry = time.monotonic() + (
                            min(1.0, self.retry_interval_s) if flushing else self.retry_interval_s
                        )
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()
            if closing:
                with self._lock:
                    if self._queue.empty():
                        return

    def _spool_batch(self, batch: dict[str, Any]) -> None:
        """Convert the rollouts' values (off the training thread), then write the batch to the spool. A
        rollout whose values cannot be sent goes to rejected/ with the reason; the others go on."""
        good, bad = [], []
        for index, rollout in enumerate(batch.get("rollouts", [])):
            try:
                good.append(clean_rollout(rollout, f"rollout (step {rollout['step']}, slot {index})"))
            except (IngestError, TypeError, ValueError) as err:
                bad.append((rollout, str(err)))
        if "rollouts" in batch:
            batch["rollouts"] = good
        try:
            self.spool.append(batch)
        except (
            TypeError,
            ValueError,
        ) as err:  # a value JSON cannot hold: keep it readable, never lose the thread
            kept = self.spool.append(_jsonable(batch))
            self._reject(kept, f"the batch holds a value JSON cannot carry: {err}", batch)
        if bad:
            kept = self.spool.append(
                {"version": batch["version"], "run": batch["run"], "rollouts": [_jsonable(r) for r, _ in bad]}
            )
            self._reject(kept, "; ".join(reason for _, reason in bad[:5]))

    def _drain(self, closing: bool) -> None:
        """Send spooled batches oldest first until the spool is empty or the server stops answering."""
        pending = self.spool.pending()
        for spooled in pending:
            batch = spooled.read()
            if "finish" in batch and spooled is not pending[-1]:
                self._finish_last(spooled, batch)  # a split appended batches after it: the outcome goes last
                continue
            if self.rollouts_dropped:
                batch["rollouts_dropped"] = self.rollouts_dropped
            try:
                answer = send_with_retries(
                    self.transport,
                    batch,
                    attempts=1 if (self.offline and not closing) else self.attempts,
                    backoff=self.backoff,
                )
            except Unreachable as err:
                if not self.offline:
                    logger.warning(
                        "RLVR Studio: %s; spooling run %s to %s and retrying", err, self.key, self.spool.dir
                    )
                self.offline = True
                return
            except TooLarge as err:
                if not self._split(spooled):
                    self._reject(spooled, f"a single rollout is over the server's body limit: {err.message}")
                continue
            except Refused as err:
                self._reject(spooled, err.message)
                continue
            self.offline = False
            self._answered(answer)
            self.spool.done(spooled)

    def _answered(self, answer: dict[str, Any]) -> None:
        run_id = answer.get("run_id")
        if isinstance(run_id, int) and run_id != self.run_id:
            self.run_id = run_id
            self.spool.write_run({**self.run, "run_id": run_id})

    def _split(self, spooled: SpooledBatch) -> bool:
        """Replace an oversized batch by its halves (appended: every item is idempotent and order-free but
        the outcome, which goes to the later half)."""
        batch = spooled.read()
        items = [
            (name, item) for name in ("metrics", "rollouts", "checkpoints") for item in batch.get(name, [])
        ]
        if len(items) < 2:
            return False
        half = len(items) // 2
        for part, last in ((items[:half], False), (items[half:], True)):
            new: dict[str, Any] = {"version": batch["version"], "run": batch["run"]}
            for name, item in part:
                new.setdefault(name, []).append(item)
            if last and "finish" in batch:
                new["finish"] = batch["finish"]
            self.spool.append(new)
        self.spool.done(spooled)
        return True

    def _finish_last(self, spooled: SpooledBatch, batch: dict[str, Any]) -> None:
        """Move the outcome of ``batch`` into a batch of its own after every other, so the server hears it
        once everything else (and the count of what it refused) has arrived."""
        finish = batch.pop("finish")
        self.spool.append(batch)
        self.spool.append({"version": batch["version"], "run": batch["run"], "finish": finish})
        self.spool.done(spooled)

    def _reject(self, spooled: SpooledBatch, message: str, batch: dict[str, Any] | None = None) -> None:
        """Move a batch the server can never take to rejected/, with the reason; count its rollouts, and keep
        its outcome (in a batch of its own) so the run still ends."""
        batch = spooled.read() if batch is None else batch
        where = self.spool.reject(spooled, message)
        self.rejections.append(message)
        self.rollouts_dropped += len(batch.get("rollouts") or [])
        logger.error("RLVR Studio refused a batch of run %s (kept in %s): %s", self.key, where, message)
        if isinstance(batch.get("finish"), dict) and any(
            batch.get(n) for n in ("metrics", "rollouts", "checkpoints")
        ):
            self.spool.append({"version": batch["version"], "run": batch["run"], "finish": batch["finish"]})

    def _at_exit(self) -> None:
        if not self._closing:
            self.flush(timeout_s=10)
            self.close()


def _source_info(given: Mapping[str, Any] | None, command: str | None) -> dict[str, Any]:
    """Host, client version and the (redacted) command, then what the caller gave; a command the caller gave
    is redacted too, and none is sent when sending it is off."""
    info: dict[str, Any] = {
        "host": socket.gethostname(),
        "client_version": CLIENT_VERSION,
        "command": command,
        **plain_json(dict(given or {})),
    }
    if command is None or not isinstance(info["command"], str):
        info.pop("command")
    else:
        info["command"] = redact_command(info["command"])
    return info


def start_run(
    *,
    project: str,
    name: str,
    config: Mapping[str, Any] | None = None,
    source: str = "script",
    source_info: Mapping[str, Any] | None = None,
    experiment: str | None = None,
    max_steps: int = 0,
    retention: Mapping[str, Any] | None = None,
    key: str | None = None,
    url: str | None = None,
    token: str | None = None,
    spool_dir: str | Path | None = None,
    flush_interval_s: float = 1.0,
    attempts: int = 4,
    transport: Transport | None = None,
    stamp_elapsed: bool = True,
    send_command: bool | None = None,
) -> IngestRun:
    """Start (or, with the ``key`` of an earlier call, continue) a run in ``project`` (its slug or id).

    Returns at once; the run appears on the server with the first batch (``run.run_id`` and
    ``run.page_url`` are set once the server has answered). ``stamp_elapsed=False`` leaves ``perf/elapsed_s``
    to the caller (a file of steps logged earlier, where the time of sending says nothing).

    The run's page shows the command line that started the process, with the values of secret-looking
    options redacted (rlvr_client/command_line.py); ``send_command=False`` (default: ``$RLVR_SEND_COMMAND``,
    on unless 0/false/no/off) sends none."""
    if source not in SOURCES:
        raise IngestError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    command = command_to_send(sys.argv, send_command)
    if not name or not str(project):
        raise IngestError("start_run needs a project (slug or id) and a run name")
    server, api_token = (transport.url, "") if transport is not None else resolve_server(url, token)
    run_key = check_key(key or uuid.uuid4().hex)
    run: dict[str, Any] = {
        "project": str(project),
        "key": run_key,
        "name": str(name),
        "experiment": str(experiment or name),
        "config": plain_json(dict(config or {})),
        "source": source,
        "source_info": _source_info(source_info, command),
        "max_steps": check_step(max_steps, "start_run max_steps"),
    }
    if retention is not None:
        run["retention"] = dict(retention)
    spool = RunSpool(Path(spool_dir) if spool_dir is not None else default_spool_dir(), run_key)
    spool.write_run({**run, "run_id": (spool.read_run() or {}).get("run_id")})
    started = IngestRun(
        run=run,
        transport=transport or Transport(server, api_token),
        spool=spool,
        flush_interval_s=flush_interval_s,
        attempts=max(1, attempts),
        stamp_elapsed=stamp_elapsed,
    )
    started.flush(timeout_s=10, stop_when_offline=True)  # the run's id and page; offline, it goes on spooling
    return started


def sync_spool(
    *,
    spool_dir: str | Path | None = None,
    url: str | None = None,
    token: str | None = None,
    transport: Transport | None = None,
) -> dict[str, int]:
    """Send every batch a process left in the spool (it crashed, or finished while the server was down);
    returns, per run key, how many batches still wait."""
    root = Path(spool_dir) if spool_dir is not None else default_spool_dir()
    server, api_token = (transport.url, "") if transport is not None else resolve_server(url, token)
    left: dict[str, int] = {}
    for key in spooled_keys(root):
        spool = RunSpool(root, key)
        described = spool.read_run()
        if described is None:
            logger.error("RLVR Studio: %s has batches but no run.json; skipped", spool.dir)
            continue
        run = {k: v for k, v in described.items() if k != "run_id"}
        # The spooled batches name the run themselves: no announcing batch.
        sender = IngestRun(
            run=run, transport=transport or Transport(server, api_token), spool=spool, announce=False
        )
        sender.close()
        left[key] = len(spool.pending())
    return left
