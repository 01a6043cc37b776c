"""Who is training a run right now: a lease in Redis, kept alive by a heartbeat while the run trains.

A worker claims ``rlvr:run-lease:<run id>`` with ``SET NX`` before it trains and refreshes it every
``HEARTBEAT_S`` with a fresh token; the key expires ``TTL_S`` after the last beat. So a claim by a second
delivery of the same run fails while the first is alive, and succeeds once a dead worker's lease expires.

Why not Celery's ``ping``: a worker whose broker connection dropped while it was training keeps training
and consuming but no longer answers remote control, so it would look dead and its run would be trained
twice. A lease that is *being refreshed* is a positive sign of life; one that stops changing is not.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from webapp.experiments.run_lease import lease_client, lease_key

logger = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
TTL_S = 20
POLL_S = 0.5


def redis_client() -> Any:
    return lease_client()


def holder_alive(
    run_id: int,
    client: Any,
    heartbeat_s: float = HEARTBEAT_S,
    ttl_s: float = TTL_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Watch the run's lease until it proves its holder alive (refreshed, or newly written) or dead
    (expired, or absent for two heartbeats). Takes up to ``ttl_s`` for a dead holder."""
    key = lease_key(run_id)
    first = client.get(key)
    deadline = clock() + (ttl_s if first is not None else 2 * heartbeat_s) + POLL_S
    while clock() < deadline:
        sleep(POLL_S)
        current = client.get(key)
        if current is not None and current != first:
            return True
        if first is not None and current is None:
            return False
    return False


def claim(
    run_id: int,
    holder: str,
    client: Any,
    heartbeat_s: float = HEARTBEAT_S,
    ttl_s: float = TTL_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Take the run's lease for ``holder``; the token to keep it with, or None while a live holder has it."""
    token = f"{holder}/{uuid.uuid4().hex}"
    if client.set(lease_key(run_id), token, nx=True, ex=int(ttl_s)):
        return token
    if holder_alive(run_id, client, heartbeat_s, ttl_s, sleep, clock):
        return None
    return token if client.set(lease_key(run_id), token, nx=True, ex=int(ttl_s)) else None


class Heartbeat:
    """Refreshes a claimed lease from a background thread until stopped, then releases it.

    Redis errors only warn (once per outage): the run goes on, and the lease is rewritten when Redis is back.
    """

    def __init__(
        self,
        run_id: int,
        holder: str,
        client: Any,
        heartbeat_s: float = HEARTBEAT_S,
        ttl_s: float = TTL_S,
        key: str | None = None,
    ) -> None:
        self.run_id, self.holder, self.client = run_id, holder, client
        self.key = key or lease_key(run_id)  # a node lease (workers/nodes.py) instead of the run's
        self.heartbeat_s, self.ttl_s = heartbeat_s, ttl_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{run_id}", daemon=True)
        self._failing = False

    def beat(self) -> None:
        try:
            self.client.set(self.key, f"{self.holder}/{uuid.uuid4().hex}", ex=int(self.ttl_s))
        except Exception as err:
            if not self._failing:
                logger.warning(
                    "run %s: cannot refresh its lease in Redis (%s); training goes on", self.run_id, err
                )
            self._failing = True
        else:
            self._failing = False

    def _run(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.beat()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.heartbeat_s + 5)
        try:
            self.client.delete(self.key)
        except Exception as err:
            logger.warning(
                "run %s: could not release its lease (%s); it expires in %ss", self.run_id, err, self.ttl_s
            )
