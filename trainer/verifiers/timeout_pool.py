"""Run many calls of one function in worker processes, each under a hard wall-clock timeout.

Why not threads or ``signal.alarm``: math-verify's own timeout uses ``signal.alarm``, which only works in a
process's main thread, and no Python-level timeout can interrupt a call stuck in C (a huge sympy power, a
catastrophic regex). So the *parent* enforces the deadline: when a call runs past ``timeout_s`` the worker
process (and its process group, so any subprocess it started) is killed with SIGKILL, that call gets a
``timeout`` outcome, and the rest of its chunk is handed to a fresh worker.

How it differs from ``concurrent.futures.ProcessPoolExecutor``: that executor marks the whole pool broken
when one worker dies and cannot tell when a queued call actually started. Here each worker reports when it
has loaded the function (module imports do not count against a call's timeout: they get
``startup_timeout_s``) and after each call, so every call gets its own clock. A batch is split into a few
chunks per worker, so a list of 64 completions costs a handful of pipe round trips, not 64 spawns.

Workers are started with the ``forkserver`` method (``spawn`` where unavailable): never ``fork``, which
would copy a parent holding CUDA state and threads. They are started lazily, reused across batches, and
shut down at interpreter exit. ``run_with_timeout`` never raises for a call's failure: errors, crashes and
timeouts come back as ``Outcome``s.

>>> import math
>>> [o.value for o in run_with_timeout(math.sqrt, [(4.0,), (9.0,)], timeout_s=5)]
[2.0, 3.0]
"""

from __future__ import annotations

import atexit
import contextlib
import math
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, Literal

Status = Literal["ok", "error", "timeout"]

# How many chunks each worker gets per batch: more balances uneven calls, fewer saves round trips.
_CHUNKS_PER_WORKER = 4


@dataclass(frozen=True)
class Outcome:
    """The result of one call: ``value`` when ``status == "ok"``, else ``error`` says what went wrong."""

    status: Status
    value: Any = None
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def describe_error(err: BaseException, limit: int = 500) -> str:
    """``'ValueError: math domain error'``: the form used in every ``detail['error']`` (one line, capped)."""
    try:
        message = " ".join(str(err).split())
    except Exception:  # a broken __str__ must not turn reporting an error into another error
        message = "(message unavailable)"
    text = f"{type(err).__name__}: {message}" if message else type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def default_workers() -> int:
    """Half the CPUs this process may use, between 1 and 8: scoring shares the machine with the trainer."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 2
    return max(1, min(8, cpus // 2))


def _worker_main(conn: Connection) -> None:
    """Worker loop: receive (pickled fn, [(index, args)]), ack the load, then send one reply per call."""
    if hasattr(os, "setsid"):
        # Own process group, so a kill also reaches any subprocess the scored function started.
        with contextlib.suppress(OSError):
            os.setsid()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the parent went away
        if message is None:
            return
        fn_blob, calls = message
        try:
            fn = pickle.loads(fn_blob)
        except BaseException as err:
            conn.send(("loaded", describe_error(err)))
            continue
        conn.send(("loaded", None))
        for index, args in calls:
            try:
                reply: tuple[str, int, Any] = ("ok", index, fn(*args))
            except BaseException as err:  # a scorer may raise anything, SystemExit included
                reply = ("error", index, describe_error(err))
            try:
                conn.send(reply)
            except Exception as err:  # the result could not be pickled (nothing was written yet)
                conn.send(("error", index, f"result could not be sent back: {describe_error(err)}"))


class _Worker:
    """Parent-side handle: the process, its pipe, and the call indices it still owes, in order."""

    def __init__(self, ctx: BaseContext) -> None:
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        self.proc: BaseProcess = ctx.Process(  # type: ignore[attr-defined]
            target=_worker_main, args=(child_conn,), daemon=True, name="rlvr-verifier-worker"
        )
        try:
            self.proc.start()
        except BaseException:
            parent_conn.close()
            raise
        finally:
            child_conn.close()
        self.conn: Connection = parent_conn
        self.owed: deque[int] = deque()
        self.loaded = False
        self.since = time.monotonic()

    @property
    def busy(self) -> bool:
        return bool(self.owed)

    def kill(self) -> None:
        if hasattr(os, "killpg") and self.proc.pid is not None:
            with contextlib.suppress(OSError):  # not (yet) a group leader, or already gone
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.kill()
        self.proc.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        """Ask politely (idle workers exit at once), then kill whatever is left."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(timeout=1)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()


class _Batch:
    """The bookkeeping of one ``run`` call: outcomes so far and chunks not yet handed to a worker."""

    def __init__(self, n: int, chunk_size: int) -> None:
        self.outcomes: list[Outcome | None] = [None] * n
        self.pending: deque[list[int]] = deque(
            list(range(start, min(start + chunk_size, n))) for start in range(0, n, chunk_size)
        )

    def fail_pending(self, status: Status, error: str) -> None:
        while self.pending:
            for index in self.pending.popleft():
                self.outcomes[index] = Outcome(status, error=error)

    def settle(self, worker: _Worker, status: Status, error: str, now: float) -> None:
        """The worker's current call ends with ``status``; the rest of its chunk goes back in the queue."""
        if worker.owed:
            index = worker.owed.popleft()
            self.outcomes[index] = Outcome(status, error=error, elapsed_s=now - worker.since)
        if worker.owed:
            self.pending.appendleft(list(worker.owed))
            worker.owed.clear()


class TimeoutPool:
    """A small process pool whose every call has a hard timeout. Thread-safe: batches run one at a time.

    ``max_workers``: processes started at most (default: ``default_workers()``). ``startup_timeout_s``: how
    long a worker may take to import the function's module before the chunk fails.
    """

    def __init__(self, max_workers: int | None = None, *, startup_timeout_s: float = 60.0) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers or default_workers()
        self.startup_timeout_s = startup_timeout_s
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        self._ctx = multiprocessing.get_context(method)
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __enter__(self) -> TimeoutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for tests and diagnostics)."""
        return [w.proc.pid for w in self._workers if w.proc.pid is not None and w.proc.is_alive()]

    def close(self) -> None:
        """Stop every worker. The pool stays usable: the next batch starts new workers."""
        with self._lock:
            if self._pid != os.getpid():
                self._workers = []  # inherited through fork: those workers belong to the parent
                return
            for worker in self._workers:
                worker.stop()
            self._workers = []

    def run(
        self,
        fn: Callable[..., Any],
        args_list: Sequence[tuple[Any, ...]],
        timeout_s: float,
        *,
        batch_timeout_s: float | None = None,
    ) -> list[Outcome]:
        """Call ``fn(*args)`` for each args tuple; one ``Outcome`` per call, in order. Never raises for a call.

        ``fn`` and the args must be picklable (a module-level function; lambdas are not). ``timeout_s`` bounds
        each call; ``batch_timeout_s``, when set, bounds the whole batch: calls unfinished by then time out.
        """
        if timeout_s <= 0 or (batch_timeout_s is not None and batch_timeout_s <= 0):
            raise ValueError(
                f"timeouts must be > 0, got timeout_s={timeout_s}, batch_timeout_s={batch_timeout_s}"
            )
        n = len(args_list)
        if n == 0:
            return []
        try:
            fn_blob = pickle.dumps(fn)
        except Exception as err:
            return [Outcome("error", error=f"function cannot be sent to a worker: {describe_error(err)}")] * n
        chunk_size = max(1, math.ceil(n / (self.max_workers * _CHUNKS_PER_WORKER)))
        batch = _Batch(n, chunk_size)
        deadline = None if batch_timeout_s is None else time.monotonic() + batch_timeout_s
        with self._lock:
            if self._pid != os.getpid():
                self._workers, self._pid = [], os.getpid()
            while batch.pending or any(w.busy for w in self._workers):
                self._dispatch(batch, fn_blob, args_list)
                self._collect(batch, timeout_s, deadline, batch_timeout_s)
        return [o if o is not None else Outcome("error", error="call was lost") for o in batch.outcomes]

    def _dispatch(self, batch: _Batch, fn_blob: bytes, args_list: Sequence[tuple[Any, ...]]) -> None:
        while batch.pending:
            worker = self._idle_worker(batch)
            if worker is None:
                return
            chunk = batch.pending.popleft()
            try:
                worker.conn.send((fn_blob, [(i, tuple(args_list[i])) for i in chunk]))
            except (OSError, EOFError):  # died while idle: replace it and retry the chunk
                batch.pending.appendleft(chunk)
                self._discard(worker)
                continue
            except Exception as err:  # arguments that cannot be pickled
                for index in chunk:
                    batch.outcomes[index] = Outcome(
                        "error", error=f"arguments cannot be sent: {describe_error(err)}"
                    )
                continue
            worker.owed = deque(chunk)
            worker.loaded = False
            worker.since = time.monotonic()

    def _idle_worker(self, batch: _Batch) -> _Worker | None:
        for worker in list(self._workers):
            if not worker.busy:
                if worker.proc.is_alive():
                    return worker
                self._discard(worker)
        if len(self._workers) >= self.max_workers:
            return None
        try:
            worker = _Worker(self._ctx)
        except Exception as err:
            if not any(w.busy for w in self._workers):
                batch.fail_pending("error", f"could not start a worker process: {describe_error(err)}")
            return None
        self._workers.append(worker)
        return worker

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        self._workers.remove(worker)

    def _collect(
        self, batch: _Batch, timeout_s: float, deadline: float | None, batch_timeout_s: float | None
    ) -> None:
        """Wait for the next reply, death or deadline among busy workers, and record what happened."""
        busy = [w for w in self._workers if w.busy]
        if not busy:
            return
        now = time.monotonic()
        limits = [w.since + (timeout_s if w.loaded else self.startup_timeout_s) for w in busy]
        wake = min([*limits, *([deadline] if deadline is not None else [])])
        ready = set(
            wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=max(0.0, wake - now))
        )
        for worker in busy:
            if worker.conn in ready or worker.proc.sentinel in ready:
                self._drain(worker, batch)
        now = time.monotonic()
        for worker in [w for w in self._workers if w.busy]:
            if deadline is not None and now >= deadline:
                batch.pending.appendleft(list(worker.owed))
                worker.owed.clear()
                batch.fail_pending("timeout", f"batch timeout after {batch_timeout_s:g}s")
                self._discard(worker)
            elif not worker.loaded and now >= worker.since + self.startup_timeout_s:
                batch.pending.appendleft(list(worker.owed))
                worker.owed.clear()
                batch.fail_pending(
                    "error", f"worker did not load the function within {self.startup_timeout_s:g}s"
                )
                self._discard(worker)
            elif worker.loaded and now >= worker.since + timeout_s:
                batch.settle(worker, "timeout", f"timeout after {timeout_s:g}s", now)
                self._discard(worker)

    def _drain(self, worker: _Worker, batch: _Batch) -> None:
        """Read every reply the worker has sent; if it died, its current call fails and the rest requeue."""
        try:
            while worker.busy and worker.conn.poll():
                try:
                    message = worker.conn.recv()
                except (EOFError, OSError):
                    raise
                except Exception as err:  # a result that cannot be unpickled here; the stream is intact
                    now = time.monotonic()
                    index = worker.owed.popleft()
                    error = f"reply could not be read: {describe_error(err)}"
                    batch.outcomes[index] = Outcome("error", error=error, elapsed_s=now - worker.since)
                    worker.since = now
                    continue
                now = time.monotonic()
                if message[0] == "loaded":
                    if message[1] is not None:  # the function could not be imported: no call can succeed
                        batch.pending.appendleft(list(worker.owed))
                        worker.owed.clear()
                        batch.fail_pending("error", f"worker could not load the function: {message[1]}")
                    worker.loaded, worker.since = True, now
                    continue
                status, index, payload = message
                worker.owed.popleft()
                batch.outcomes[index] = (
                    Outcome("ok", value=payload, elapsed_s=now - worker.since)
                    if status == "ok"
                    else Outcome("error", error=payload, elapsed_s=now - worker.since)
                )
                worker.since = now
        except (EOFError, OSError):
            pass
        if worker.busy and not worker.proc.is_alive():
            worker.proc.join(timeout=1)
            code = worker.proc.exitcode
            if not worker.loaded:  # died before running anything: every call would do the same
                batch.pending.appendleft(list(worker.owed))
                worker.owed.clear()
                batch.fail_pending(
                    "error", f"worker process died (exit code {code}) while loading the function"
                )
                self._discard(worker)
                return
            batch.settle(
                worker, "error", f"worker process died (exit code {code}) during this call", time.monotonic()
            )
            self._discard(worker)


_default_pool: TimeoutPool | None = None
_default_lock = threading.Lock()


def default_pool() -> TimeoutPool:
    """The process-wide pool verifiers share (created on first use, closed at interpreter exit)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._pid != os.getpid():
            _default_pool = TimeoutPool()
            atexit.register(_default_pool.close)
        return _default_pool


def run_with_timeout(
    fn: Callable[..., Any],
    args_list: Sequence[tuple[Any, ...]],
    timeout_s: float,
    *,
    batch_timeout_s: float | None = None,
    pool: TimeoutPool | None = None,
) -> list[Outcome]:
    """Run ``fn(*args)`` for every args tuple in worker processes, each call killed after ``timeout_s``.

    Uses the shared ``default_pool()`` unless ``pool`` is given. See ``TimeoutPool.run``.
    """
    return (pool or default_pool()).run(fn, args_list, timeout_s, batch_timeout_s=batch_timeout_s)
