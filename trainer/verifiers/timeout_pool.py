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

Each worker is a fresh interpreter started with ``subprocess`` (``python -c`` with this process's
``sys.path``), talking over a socket pair. Not ``fork``, which would copy a parent holding CUDA state and
threads; and not multiprocessing's ``spawn`` or ``forkserver`` either, because both re-import the caller's
``__main__`` script in the children (forkserver imports it once in the server, as its default preload is
``["__main__"]``; each child then skips it only because the server already has it). A script that calls a
verifier at top level, without an ``if __name__ == "__main__":`` guard, then ran itself again inside the
pool: its workers never started and every sample got reward 0. A fresh interpreter never imports the
caller's script, so such a script just works; the price is that the scored function must live in an
importable module. Workers are started lazily, reused across batches, and shut down at interpreter exit.

``run_with_timeout`` never raises for a call's failure: errors, crashes and timeouts come back as
``Outcome``s. It raises ``PoolStartError`` when no worker can start at all (no interpreter, no processes
left, ``trainer`` not importable in the child): rewards of 0 for an environment fault would be silent.

>>> import math
>>> [o.value for o in run_with_timeout(math.sqrt, [(4.0,), (9.0,)], timeout_s=5)]
[2.0, 3.0]
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Literal

from trainer.errors import RLVRError

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


class PoolStartError(RLVRError):
    """No worker process could be started: scoring cannot go on (raised, unlike a call's failure)."""


_BOOTSTRAP = "import sys; sys.path[:] = {path!r}; from {module} import _worker_entry; _worker_entry({fd})"


def _pool_start_error(why: str) -> PoolStartError:
    return PoolStartError(
        f"the verifier process pool could not start: {why}. The workers run `{sys.executable or 'python'} -c "
        "...` with this process's sys.path and import the `trainer` package: check that this interpreter can "
        "import it and that the machine may start more processes (ulimit -u, free memory). Your own script "
        "is never re-imported by these workers, so no `if __name__ == '__main__':` guard is needed for them."
    )


def _worker_entry(fd: int) -> None:
    """Entry point of a worker interpreter: wrap the inherited socket and serve calls."""
    conn = Connection(fd)
    conn.send(("ready", os.getpid()))
    _worker_main(conn)


class _Worker:
    """Parent-side handle: the worker process, its socket, and the call indices it still owes, in order.

    The worker is a fresh interpreter (``subprocess``), not a ``multiprocessing`` child: spawn and forkserver
    re-import the caller's ``__main__`` in every child, so a script calling a verifier without an
    ``if __name__ == "__main__":`` guard would run itself again in each worker (see the module docstring).
    """

    def __init__(self) -> None:
        if not sys.executable:
            raise _pool_start_error("sys.executable is empty, so no Python interpreter can be started")
        parent_sock, child_sock = socket.socketpair()
        fd = child_sock.fileno()
        code = _BOOTSTRAP.format(path=list(sys.path), module=__name__, fd=fd)
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-c", code], pass_fds=(fd,), stdin=subprocess.DEVNULL, start_new_session=True
            )
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        self.pid: int = self.popen.pid
        self.conn: Connection = Connection(parent_sock.detach())
        self.sentinel: int | None = _pidfd(self.pid)
        self.owed: deque[int] = deque()
        self.started = False  # the interpreter came up and said "ready"
        self.loaded = False
        self.since = time.monotonic()

    @property
    def busy(self) -> bool:
        return bool(self.owed)

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def waitables(self) -> list[Any]:
        return [self.conn] if self.sentinel is None else [self.conn, self.sentinel]

    def kill(self) -> None:
        if hasattr(os, "killpg"):
            with contextlib.suppress(OSError):  # already gone
                os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.popen.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        self._release()

    def stop(self) -> None:
        """Ask politely (idle workers exit at once), then kill whatever is left."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        try:
            self.popen.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.kill()
            return
        self._release()

    def _release(self) -> None:
        self.conn.close()
        if self.sentinel is not None:
            with contextlib.suppress(OSError):
                os.close(self.sentinel)
            self.sentinel = None


def _pidfd(pid: int) -> int | None:
    """A file descriptor that becomes readable when ``pid`` exits (Linux 5.3+), else None (EOF tells)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


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
        return [w.pid for w in self._workers if w.is_alive()]

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
        max_workers: int | None = None,
    ) -> list[Outcome]:
        """Call ``fn(*args)`` for each args tuple; one ``Outcome`` per call, in order. Never raises for a call.

        ``fn`` and the args must be picklable and importable by module name in a fresh interpreter (a
        module-level function of an importable module: not a lambda, not a function of the ``__main__``
        script). ``timeout_s`` bounds each call; ``batch_timeout_s``, when set, bounds the whole batch:
        calls unfinished by then time out. ``max_workers`` lets this batch use more (or fewer) workers than
        the pool's own ``max_workers``: calls that may hang are best spread over many workers, since each
        hang holds its worker for ``timeout_s``. Raises ``PoolStartError`` only when no worker can start.
        """
        if timeout_s <= 0 or (batch_timeout_s is not None and batch_timeout_s <= 0):
            raise ValueError(
                f"timeouts must be > 0, got timeout_s={timeout_s}, batch_timeout_s={batch_timeout_s}"
            )
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        limit = max_workers or self.max_workers
        n = len(args_list)
        if n == 0:
            return []
        try:
            fn_blob = pickle.dumps(fn)
        except Exception as err:
            return [Outcome("error", error=f"function cannot be sent to a worker: {describe_error(err)}")] * n
        chunk_size = max(1, math.ceil(n / (limit * _CHUNKS_PER_WORKER)))
        batch = _Batch(n, chunk_size)
        deadline = None if batch_timeout_s is None else time.monotonic() + batch_timeout_s
        with self._lock:
            if self._pid != os.getpid():
                self._workers, self._pid = [], os.getpid()
            try:
                while batch.pending or any(w.busy for w in self._workers):
                    self._dispatch(batch, fn_blob, args_list, limit)
                    self._collect(batch, timeout_s, deadline, batch_timeout_s)
            except PoolStartError:
                for worker in [w for w in self._workers if w.busy]:  # their replies belong to this batch
                    self._discard(worker)
                raise
        return [o if o is not None else Outcome("error", error="call was lost") for o in batch.outcomes]

    def _dispatch(
        self, batch: _Batch, fn_blob: bytes, args_list: Sequence[tuple[Any, ...]], limit: int
    ) -> None:
        while batch.pending:
            worker = self._idle_worker(limit)
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

    def _idle_worker(self, limit: int) -> _Worker | None:
        """An idle live worker (started if needed) while fewer than ``limit`` are busy, else None."""
        if sum(w.busy for w in self._workers) >= limit:
            return None
        for worker in list(self._workers):
            if not worker.busy:
                if worker.is_alive():
                    return worker
                self._discard(worker)
        if len(self._workers) >= limit:
            return None
        try:
            worker = _Worker()
        except PoolStartError:
            raise
        except Exception as err:
            if not any(w.busy for w in self._workers):  # nothing else can make progress
                raise _pool_start_error(f"starting a worker failed with {describe_error(err)}") from err
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
        ready = set(wait([x for w in busy for x in w.waitables()], timeout=max(0.0, wake - now)))
        for worker in busy:
            if worker.conn in ready or (worker.sentinel is not None and worker.sentinel in ready):
                self._drain(worker, batch)
        now = time.monotonic()
        for worker in [w for w in self._workers if w.busy]:
            if deadline is not None and now >= deadline:
                batch.pending.appendleft(list(worker.owed))
                worker.owed.clear()
                batch.fail_pending(
                    "timeout", f"batch timed out after {batch_timeout_s:g} s (the limit for the whole batch)"
                )
                self._discard(worker)
            elif not worker.loaded and now >= worker.since + self.startup_timeout_s:
                batch.pending.appendleft(list(worker.owed))
                worker.owed.clear()
                batch.fail_pending(
                    "error", f"worker did not load the function within {self.startup_timeout_s:g}s"
                )
                self._discard(worker)
            elif worker.loaded and now >= worker.since + timeout_s:
                batch.settle(worker, "timeout", f"timed out after {timeout_s:g} s", now)
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
                if message[0] == "ready":
                    worker.started = True
                    continue
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
        if worker.busy and not worker.is_alive():
            code = worker.exitcode
            if not worker.started:  # the interpreter itself did not come up: no worker ever will
                self._discard(worker)
                raise _pool_start_error(f"a worker interpreter exited with code {code} before it was ready")
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
    max_workers: int | None = None,
) -> list[Outcome]:
    """Run ``fn(*args)`` for every args tuple in worker processes, each call killed after ``timeout_s``.

    Uses the shared ``default_pool()`` unless ``pool`` is given. See ``TimeoutPool.run``.
    """
    return (pool or default_pool()).run(
        fn, args_list, timeout_s, batch_timeout_s=batch_timeout_s, max_workers=max_workers
    )
