"""Two data-parallel ranks as forked processes (torch is imported already, so a rank starts in milliseconds)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest


def run_forked_ranks(
    target: Callable[..., None],
    args: Callable[[int], tuple[object, ...]],
    results: Path,
    hang: str,
    ranks: int = 2,
) -> list[str]:
    """Start ``target(*args(rank))`` for each rank, wait up to 60 s, fail on a hung rank with ``hang``; return each
    rank's ``results/rank<r>.txt`` (what the rank wrote: "ok" or its traceback)."""
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=target, args=args(r)) for r in range(ranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    for p in procs:
        if p.is_alive():
            p.kill()
            pytest.fail(hang)
    return [(results / f"rank{r}.txt").read_text() for r in range(ranks)]
