"""Sending one batch: gzip-compressed JSON over HTTP, retried with exponential backoff and jitter.

What is worth retrying: no connection, a timeout, 429 and 5xx (the server restarting, overloaded, or
behind a proxy that lost it). What is not: any other 4xx, which says the batch itself is wrong; it carries
the API's one error shape ``{"message", "extra"}``, which ``Refused`` keeps. 413 (too large) is its own
case: the sender splits the batch and tries the halves.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

INGEST_PATH = "/api/ingest/batches/"


class Unreachable(Exception):
    """The server did not take the batch, for a reason that may pass (down, restarting, overloaded)."""


class Refused(Exception):
    """The server refused the batch itself (4xx); ``message`` is its explanation."""

    def __init__(self, status: int, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body or {}


class TooLarge(Refused):
    """413: the batch is over the server's body limit."""


@dataclass(frozen=True)
class Backoff:
    """Waits of ``base_s * 2**attempt`` capped at ``max_s``, each scaled by a random factor in [0.5, 1]."""

    base_s: float = 0.5
    max_s: float = 30.0

    def wait_s(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        return min(self.max_s, self.base_s * 2 ** min(attempt, 20)) * (0.5 + 0.5 * rng())


def _message(response: httpx.Response) -> tuple[str, dict[str, Any]]:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:300]}", {}
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}: {str(body)[:300]}", {}
    message = str(body.get("message") or body.get("detail") or f"HTTP {response.status_code}")
    fields = (body.get("extra") or {}).get("fields") or {}
    if isinstance(fields, dict):
        message += "".join(
            f"\n  {path}: {' '.join(map(str, msgs))}" for path, msgs in list(fields.items())[:20]
        )
    return message, body


class Transport:
    """POSTs batches to ``<url>/api/ingest/batches/`` with the API token."""

    def __init__(
        self, url: str, token: str, timeout_s: float = 60.0, http: httpx.Client | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.http = http or httpx.Client(timeout=timeout_s)
        self.headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
            "Accept": "application/json",
        }

    def send(self, batch: dict[str, Any]) -> dict[str, Any]:
        body = gzip.compress(json.dumps(batch, allow_nan=False).encode("utf-8"), compresslevel=5)
        try:
            response = self.http.post(self.url + INGEST_PATH, content=body, headers=self.headers)
        except httpx.HTTPError as err:
            raise Unreachable(f"cannot reach {self.url}: {err}") from None
        if response.status_code == 429 or response.status_code >= 500:
            message, _ = _message(response)
            raise Unreachable(f"{self.url} answered {response.status_code}: {message}")
        if response.status_code == 413:
            message, data = _message(response)
            raise TooLarge(413, message, data)
        if response.status_code >= 400:
            message, data = _message(response)
            if response.status_code == 401:
                message = (
                    f"{self.url} refused the API token (run `rlvr login` again, or set RLVR_TOKEN): {message}"
                )
            raise Refused(response.status_code, message, data)
        data = response.json()
        return data if isinstance(data, dict) else {}

    def close(self) -> None:
        self.http.close()


def send_with_retries(
    transport: Transport,
    batch: dict[str, Any],
    *,
    attempts: int,
    backoff: Backoff,
    sleep: Callable[[float], None] = time.sleep,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """``transport.send`` up to ``attempts`` times while the server is unreachable; raises the last
    ``Unreachable``, or ``Refused`` at once."""
    for attempt in range(attempts):
        try:
            return transport.send(batch)
        except Unreachable:
            if attempt + 1 >= attempts or should_stop():
                raise
            sleep(backoff.wait_s(attempt))
    raise Unreachable("no attempts")  # attempts < 1
