"""Score a batch with several verifiers and combine their rewards: the "score" line of the training step.

``total[i] = sum_k weights[k] * reward_k[i]`` over the sources that scored completion i (TRL's
``reward_weights`` rule). ``correct`` comes from the *first* verifier, the primary one, and feeds
``rollout/accuracy``: list the answer checker first and shaping rewards (format, length) after it. A programmatic
verifier that raises, returns the wrong number of results or a non-finite reward gives reward 0 to the whole batch
with ``detail['error']`` set, and training goes on: ``score_batch`` raises only for caller bugs (mismatched
lengths) and ``PoolStartError`` (no verifier worker process can start).

Absence: a reward source that calls a model or an endpoint returns ``absent_result`` (reward ``nan``,
``detail['absent']``) when it has no score; one that breaks its contract outright is absent too when it sets
``absent_on_failure``. ``ScoreBatch.absent`` keeps these apart from the scores: ``per_verifier`` holds ``nan``
there, the total leaves them out, ``correct`` is False. What absence means for training (drop the sample from its
group's statistics, count it 0, or fail the run) is the config's ``reward_absence`` (trainer/step/collect.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainer.errors import VerifierError
from trainer.jsonable import to_jsonable
from trainer.samples import Sample
from trainer.verifiers.base import Verifier, VerifierResult, absent_result, build_verifier, error_result
from trainer.verifiers.timeout_pool import PoolStartError, describe_error


@dataclass
class ScoreBatch:
    """Rewards of one batch of completions: combined, per verifier key, and the details behind them."""

    total: list[float]  # [N] weighted sum over the verifiers that scored each completion
    per_verifier: dict[str, list[float]]  # key -> [N]; nan where absent
    correct: list[bool]  # [N] from the first (primary) verifier; False where it is absent
    details: list[dict[str, dict[str, Any]]]  # [N] key -> JSON-serialisable detail
    # verifier key -> [N]: no score (detail['absent']); per_verifier holds nan there
    absent: dict[str, list[bool]] = field(default_factory=dict)
    # verifier key -> wall seconds the source took for the batch
    latency_s: dict[str, float] = field(default_factory=dict)

    def absent_rows(self, weights: Mapping[str, float]) -> list[bool]:
        """[N] whether a source with a non-zero weight in ``weights`` (key -> weight) has no score for the row."""
        keys = [k for k, flags in self.absent.items() if weights.get(k, 0.0) != 0.0 and any(flags)]
        return [any(self.absent[k][i] for k in keys) for i in range(len(self.total))]

    def absent_fractions(self) -> dict[str, float]:
        """Verifier key -> the share of the batch it had no score for."""
        return {k: sum(flags) / len(flags) if flags else 0.0 for k, flags in self.absent.items()}

    def last_absent_reason(self, key: str) -> str | None:
        """The ``absent`` reason of the last row ``key`` had no score for (None: it scored every row)."""
        for i in reversed(range(len(self.absent.get(key, [])))):
            if self.absent[key][i]:
                return str(self.details[i].get(key, {}).get("absent", "unknown"))
        return None


class VerifierSpecLike(Protocol):
    """What ``build_verifiers`` reads from a spec (``trainer.config.VerifierSpec`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...

    @property
    def key(self) -> str: ...


def build_verifiers(specs: Iterable[VerifierSpecLike]) -> list[tuple[str, Verifier]]:
    """``[(key, verifier)]`` in spec order, each loaded (a verifier's ``load()``, where it has one: a reward
    model's weights); raises VerifierError (bad params), ConfigError (unknown name, a model that cannot load)."""
    built: list[tuple[str, Verifier]] = []
    for spec in specs:
        if any(key == spec.key for key, _ in built):
            raise VerifierError(
                f"two verifiers share the key {spec.key!r}: give one of them a distinct label"
            )
        verifier = build_verifier(spec.name, dict(spec.params))
        load = getattr(verifier, "load", None)
        if callable(load):
            load()
        built.append((spec.key, verifier))
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
    absent: dict[str, list[bool]] = {}
    latency: dict[str, float] = {}
    for position, ((key, verifier), weight) in enumerate(zip(verifiers, weights, strict=True)):
        started = time.perf_counter()
        results = _run_one(verifier, completions, samples)
        latency[key] = time.perf_counter() - started
        per_verifier[key] = [r.reward for r in results]
        absent[key] = [r.absent for r in results]
        for i, result in enumerate(results):
            if not result.absent:  # an absent score adds nothing: reward_absence decides what it means
                total[i] += weight * result.reward
            details[i][key] = to_jsonable(result.detail)
            if position == 0:
                correct[i] = result.correct and not result.absent
    return ScoreBatch(
        total=total,
        per_verifier=per_verifier,
        correct=correct,
        details=details,
        absent=absent,
        latency_s=latency,
    )


def _run_one(
    verifier: Verifier, completions: Sequence[str], samples: Sequence[Sample]
) -> list[VerifierResult]:
    """The verifier's results, or one error result per completion if it broke its contract (absent results for a
    source that sets ``absent_on_failure``: a model or endpoint failing says nothing about the completions)."""
    n = len(completions)
    failed = absent_result if getattr(verifier, "absent_on_failure", False) else error_result
    try:
        results = list(verifier(completions, samples))
    except PoolStartError:  # the environment cannot score at all: stop rather than reward 0 silently
        raise
    except Exception as err:
        return [failed(describe_error(err)) for _ in range(n)]
    if len(results) != n:
        return [failed(f"verifier returned {len(results)} results for {n} completions") for _ in range(n)]
    checked = []
    for result in results:
        try:
            detail = dict(result.detail)
            if "absent" in detail:  # no score: nan, whatever the verifier put in reward
                checked.append(absent_result(str(detail.pop("absent")), **detail))
                continue
            reward = float(result.reward)
            if not math.isfinite(reward):
                raise ValueError(f"non-finite reward {reward}")
            checked.append(VerifierResult(reward, bool(result.correct), detail))
        except Exception as err:
            checked.append(failed(f"invalid result: {describe_error(err)}"))
    return checked
