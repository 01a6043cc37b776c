"""The web side's view of a run's lease (workers/lease.py keeps it): a Redis key a training worker holds and
refreshes every few seconds while it trains the run, and which expires when the worker is gone.

Read by ``run_cancel``: a running run whose lease nobody holds has no worker to stop it cooperatively, so
it is cancelled at once. Reading only, one GET; the web process never takes or refreshes a lease.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def lease_key(run_id: int) -> str:
    return f"rlvr:run-lease:{run_id}"


def lease_client() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=3, socket_connect_timeout=3)


def run_lease_held(*, run_id: int, client: Any = None) -> bool | None:
    """Whether a worker holds the run's lease now: True, False, or None when Redis cannot be asked."""
    try:
        return (client or lease_client()).get(lease_key(run_id)) is not None
    except Exception as err:  # redis.RedisError, or a bad REDIS_URL: cannot tell
        logger.warning("run %s: cannot read its lease (%s)", run_id, err)
        return None
