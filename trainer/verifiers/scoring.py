"""Score a batch with several verifiers and combine their rewards: the "score" line of the training step.

``total[i] = sum_k weights[k] * reward_k[i]`` (TRL's ``reward_weights`` rule). ``correct`` comes from the
*first* verifier, the primary one, and feeds ``rollout/accuracy``: list the answer checker first and shaping
rewards (format, length) after it. A verifier that raises, returns the wrong number of results or a
non-finite reward gives reward 0 to the whole batch with ``detail['error']`` set, and training goes on:
``score_batch`` raises only for caller bugs (mismatched lengths)
and ``PoolStartError`` (no verifier worker process can start).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from trainer.errors import VerifierError
from trainer.jsonable import to_jsonable
from trainer.samples import Sample
from trainer.verifiers.base import Verifier, VerifierResult, build_verifier, error_result
from trainer.verifiers.timeout_pool import PoolStartError, describe_error


@dataclass
class ScoreBatch:
    """Rewards of one batch of completions: combined, per verifier key, and the details behind them."""

    total: list[float]  # [N] weighted sum over verifiers
    per_verifier: dict[str, list[float]]  # key -> [N]
    correct: list[bool]  # [N] from the first (primary) verifier
    details: list[dict[str, dict[str, Any]]]  # [N] key -> JSON-serialisable detail


class VerifierSpecLike(Protocol):
    """What ``build_verifiers`` reads from a spec (``trainer.config.VerifierSpec`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...

    @property
    def key(self) -> str: ...


def build_verifiers(specs: Iterable[VerifierSpecLike]) -> list[tuple[str, Verifier]]:
    """``[(key, verifier)]`` in spec order; raises VerifierError (bad params) or ConfigError (unknown name)."""
    built: list[tuple[str, Verifier]] = []
    for spec in specs:
        if any(key == spec.key for key, _ in built):
            raise VerifierError(
                f"two verifiers share the key {spec.key!r}: give one of them a distinct label"
            )
        built.append((spec.key, build_verifier(spec.name, dict(spec.params))))
    return built


def score_batch(
    verifiers: Sequence[tuple[str, Verifier]],
    weights: Sequence[float],
    completions: Sequence[str],
    samples: Sequence[Sample],
) -> ScoreBatch:
    """Run every verifier on the batch and combine. Never raises because of a verifier (see module doc)."""
    if len(weights) != len(verifiers):
        raise ValueError(
            f"{len(weights)} weights for {len(verifiers)} verifiers: give one weight per verifier"
        )
    if len(completions) != len(samples):
        raise ValueError(
            f"{len(completions)} completions but {len(samples)} samples: pass one sample per completion"
        )
    n = len(completions)
    total = [0.0] * n
    per_verifier: dict[str, list[float]] = {}
    correct = [False] * n
    details: list[dict[str, dict[str, Any]]] = [{} for _ in range(n)]
    for position, ((key, verifier), weight) in enumerate(zip(verifiers, weights, strict=True)):
        results = _run_one(verifier, completions, samples)
        per_verifier[key] = [r.reward for r in results]
        for i, result in enumerate(results):
            total[i] += weight * result.reward
            details[i][key] = to_jsonable(result.detail)
            if position == 0:
                correct[i] = result.correct
    return ScoreBatch(total=total, per_verifier=per_verifier, correct=correct, details=details)


def _run_one(
    verifier: Verifier, completions: Sequence[str], samples: Sequence[Sample]
) -> list[VerifierResult]:
    """The verifier's results, or one error result per completion if it broke its contract."""
    n = len(completions)
    try:
        results = list(verifier(completions, samples))
    except PoolStartError:  # the environment cannot score at all: stop rather than reward 0 silently
        raise
    except Exception as err:
        return [error_result(err) for _ in range(n)]
    if len(results) != n:
        return [
            error_result(f"verifier returned {len(results)} results for {n} completions") for _ in range(n)
        ]
    checked = []
    for result in results:
        try:
            reward = float(result.reward)
            if not math.isfinite(reward):
                raise ValueError(f"non-finite reward {reward}")
            checked.append(VerifierResult(reward, bool(result.correct), dict(result.detail)))
        except Exception as err:
            checked.append(error_result(f"invalid result: {describe_error(err)}"))
    return checked
