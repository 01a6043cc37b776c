"""The web side's view of a run's lease (workers/lease.py keeps it): a Redis key a training worker holds and
refreshes every few seconds while it trains the run, and which expires when the worker is gone.

Read by ``run_cancel``: a running run whose lease nobody holds has no worker to stop it cooperatively, so
it is cancelled at once. Reading only; the web process never takes or refreshes a lease.

A run over several hosts (``training.num_nodes`` > 1) has, besides the run's lease (held by the node task that
hosts the rendezvous), one lease per node task, ``rlvr:run-lease:<id>:node-<round>-<index>`` (workers/nodes.py),
so a run any of whose nodes is alive counts as held here and in the sweep (workers/sweep.py).
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def lease_key(run_id: int) -> str:
    return f"rlvr:run-lease:{run_id}"


def node_lease_key(run_id: int, round_: int, index: int) -> str:
    """The lease of node task ``index`` of round ``round_`` of a run over several hosts."""
    return f"{lease_key(run_id)}:node-{round_}-{index}"


def node_leases_held(run_id: int, client: Any) -> bool:
    """Whether any node task of the run holds its node lease now (one SCAN over the run's node keys)."""
    return any(True for _ in client.scan_iter(match=f"{lease_key(run_id)}:node-*", count=100))


def lease_client() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=3, socket_connect_timeout=3)


def run_lease_held(*, run_id: int, client: Any = None) -> bool | None:
    """Whether a worker holds the run's lease now: True, False, or None when Redis cannot be asked."""
    try:
        client = client or lease_client()
        return client.get(lease_key(run_id)) is not None or node_leases_held(run_id, client)
    except Exception as err:  # redis.RedisError, or a bad REDIS_URL: cannot tell
        logger.warning("run %s: cannot read its lease (%s)", run_id, err)
        return None
