"""Scoring a few completions outside the calling process, each under a hard wall-clock budget.

The web test bench (webapp/verification/bench.py) scores one completion, or a definition's saved test
cases, while the user waits. Run in the request thread, a verifier that holds the CPU (a pathological
pattern, a huge input) stalls that request, and, because a C-level loop never releases Python's GIL, every
other request of the single web process too. Here each completion is one call in a timeout-pool worker
(trainer/verifiers/timeout_pool.py): the calling thread only waits on a pipe (the GIL is free, so other
requests are served), and a call still running after ``budget_s`` has its worker killed and comes back as
a timeout verdict ("verifier exceeded its 5 s budget"). ``batch_budget_s`` bounds the whole batch.

Verifiers in ``SELF_ISOLATING`` (math, reasoning_gym, code) already run their slow part in timeout-pool
workers under their own hard timeouts, and must: a pool worker is a daemon process, which may not start
processes of its own. They are called in the caller's process; what they do there (answer extraction,
RE2 patterns) is linear in the completion's length.

Two small pools of one worker each serve the bench, so two users' checks run side by side and a third
waits (at most ``wait_s``) rather than queueing behind an unbounded line. Workers are started on first use,
reused, and stopped at interpreter exit. ``score_isolated`` never raises because of a completion: a
timeout, a crash or a busy bench becomes an error result; bad verifier params raise ``VerifierError`` (and
an unknown name ``ConfigError``) in the caller, before anything is sent to a worker.
"""

from __future__ import annotations

import atexit
import functools
import json
import queue
import threading
from collections.abc import Sequence
from typing import Any

from trainer.samples import Sample
from trainer.verifiers.base import Verifier, VerifierResult, build_verifier, error_result
from trainer.verifiers.timeout_pool import Outcome, TimeoutPool

DEFAULT_BUDGET_S = 5.0
SELF_ISOLATING = frozenset({"math", "reasoning_gym", "code"})
POOLS = 2  # checks that run side by side; each pool has one worker process
STARTUP_TIMEOUT_S = 30.0  # a fresh worker imports trainer.verifiers before its first call (not counted)


def score_in_worker(name: str, params_json: str, completion: str, reference: str | None, index: int) -> Any:
    """Run in a pool worker: the verifier ``name`` (built once per worker and params) on one completion."""
    (result,) = _built(name, params_json)([completion], [Sample(f"bench-{index}", "", reference)])
    return result


@functools.lru_cache(maxsize=32)
def _built(name: str, params_json: str) -> Verifier:
    return build_verifier(name, json.loads(params_json))


class IsolatedScorer:
    """``POOLS`` timeout pools handed out one per batch (thread-safe)."""

    def __init__(self, pools: int = POOLS) -> None:
        self._free: queue.LifoQueue[TimeoutPool] = queue.LifoQueue()
        self._all: list[TimeoutPool] = []
        self._lock = threading.Lock()
        self._size = pools

    def score(
        self,
        name: str,
        params: dict[str, Any],
        pairs: Sequence[tuple[str, str | None]],
        *,
        budget_s: float = DEFAULT_BUDGET_S,
        batch_budget_s: float | None = None,
        wait_s: float | None = None,
    ) -> list[VerifierResult]:
        """One result per (completion, reference) pair, in order; see the module docstring."""
        verifier = build_verifier(name, params)  # bad params fail here, in the caller
        if not pairs:
            return []
        if name in SELF_ISOLATING:
            samples = [Sample(f"bench-{i}", "", reference) for i, (_, reference) in enumerate(pairs)]
            return list(verifier([c for c, _ in pairs], samples))
        params_json = json.dumps(params, sort_keys=True)
        calls = [(name, params_json, c, r, i) for i, (c, r) in enumerate(pairs)]
        pool = self._checkout(budget_s if wait_s is None else wait_s)
        if pool is None:
            busy = "the test bench is busy with other checks; try again in a few seconds"
            return [error_result(busy) for _ in pairs]
        try:
            outcomes = pool.run(score_in_worker, calls, budget_s, batch_timeout_s=batch_budget_s)
        finally:
            self._free.put(pool)
        return [_result(o, budget_s, batch_budget_s) for o in outcomes]

    def close(self) -> None:
        """Stop every worker; the scorer stays usable (the next batch starts new ones)."""
        with self._lock:
            for pool in self._all:
                pool.close()

    def _checkout(self, wait_s: float) -> TimeoutPool | None:
        with self._lock:
            if self._free.empty() and len(self._all) < self._size:
                pool = TimeoutPool(max_workers=1, startup_timeout_s=STARTUP_TIMEOUT_S)
                self._all.append(pool)
                return pool
        try:
            return self._free.get(timeout=wait_s)
        except queue.Empty:
            return None


def _result(outcome: Outcome, budget_s: float, batch_budget_s: float | None) -> VerifierResult:
    if outcome.ok and isinstance(outcome.value, VerifierResult):
        return outcome.value
    if outcome.ok:
        return error_result(f"verifier returned {type(outcome.value).__name__}, not a result")
    if outcome.status == "timeout" and (outcome.error or "").startswith("batch"):
        return error_result(
            f"the checks exceeded their {batch_budget_s:g} s budget together, so this one was stopped; "
            "run fewer test cases at once or make the verifier cheaper",
            timeout_s=batch_budget_s,
        )
    if outcome.status == "timeout":
        return error_result(
            f"verifier exceeded its {budget_s:g} s budget and was stopped; simplify its pattern or "
            "shorten the completion",
            timeout_s=budget_s,
        )
    return error_result(f"verifier could not run: {outcome.error}")


_scorer: IsolatedScorer | None = None
_scorer_lock = threading.Lock()


def default_scorer() -> IsolatedScorer:
    """The process-wide scorer (created on first use, its workers stopped at interpreter exit)."""
    global _scorer
    with _scorer_lock:
        if _scorer is None:
            _scorer = IsolatedScorer()
            atexit.register(_scorer.close)
        return _scorer


def score_isolated(
    name: str,
    params: dict[str, Any],
    pairs: Sequence[tuple[str, str | None]],
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    batch_budget_s: float | None = None,
) -> list[VerifierResult]:
    """Verdicts of (completion, reference) pairs by verifier ``name``, each under ``budget_s`` (see above)."""
    return default_scorer().score(name, params, pairs, budget_s=budget_s, batch_budget_s=batch_budget_s)
