"""The verifier seam: a registry of factories, each building a batched reward function from parameters.

A verifier turns (completion text, Sample) into a reward and a detail record that the dashboard shows
(what was extracted, what was expected, why it passed or failed). Parameters are validated by the
verifier's own pydantic ``Params`` model, so a bad parameter fails when the config is loaded.

Two kinds of failure while scoring, kept apart. A programmatic verifier (deterministic code) that crashes gives
``error_result``: reward 0 with ``detail['error']``, as before. A reward source that calls a model or an endpoint
(``reward_model``, ``judge``) and gets no usable score gives ``absent_result``: reward ``nan`` with
``detail['absent']``; a score that fails or cannot be parsed is absent, never 0, and the config's
``reward_absence`` section decides what absence means (trainer/verifiers/scoring.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from trainer.errors import VerifierError
from trainer.registry import Registry
from trainer.samples import Sample
from trainer.verifiers.timeout_pool import PoolStartError, describe_error


@dataclass
class VerifierResult:
    """One completion's score from one verifier.

    ``reward`` is a float (usually in [0, 1]); ``correct`` says whether the answer counts as correct (used
    for rollout/accuracy); ``detail`` holds JSON-serialisable facts such as ``extracted``, ``expected``,
    ``reason`` and ``error`` (set when the verifier crashed or timed out: then reward is 0). A result with
    ``detail['absent']`` has no score (reward ``nan``, correct False): see ``absent_result``.
    """

    @property
    def absent(self) -> bool:
        """Whether this completion has no score from this source (``absent_result``)."""
        return "absent" in self.detail

    reward: float
    correct: bool
    detail: dict[str, Any] = field(default_factory=dict)


class VerifierParams(BaseModel):
    """Base for each verifier's parameter model; unknown keys are refused."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False
    )  # every bound: tests/trainer/test_config_bounds.py


class Verifier(Protocol):
    """A batched reward function. Must never raise while scoring: a programmatic verifier's errors become reward
    0 + detail.error (``error_result``), a model or endpoint source's failures absent results (``absent_result``).

    A verifier that loads something heavy (a reward model) may also define ``load() -> None``: ``build_verifiers``
    calls it, so a broken model folder fails when the run is built, while ``build_verifier`` alone (the web
    process validating a config) stays cheap and torch-free."""

    name: ClassVar[str]
    Params: ClassVar[type[VerifierParams]]

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]: ...


VERIFIERS: Registry[type[Verifier]] = Registry("verifier")


def build_verifier(name: str, params: dict[str, Any] | None = None) -> Verifier:
    """Instantiate a registered verifier with validated parameters (raises VerifierError on bad ones)."""
    cls = VERIFIERS.get(name)
    try:
        validated = cls.Params.model_validate(params or {})
    except ValidationError as err:
        problems = "; ".join(_describe_param_error(e, cls.Params) for e in err.errors())
        raise VerifierError(f"verifier {name!r} has invalid params: {problems}") from None
    return cls(validated)  # type: ignore[call-arg]


def _describe_param_error(error: Any, params: type[VerifierParams]) -> str:
    where = ".".join(str(p) for p in error["loc"]) or "params"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown parameter; valid parameters are: {', '.join(params.model_fields)}"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"


def shown(text: str | None, limit: int = 300) -> str | None:
    """``text`` capped for a detail record (the full completion is stored elsewhere)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def error_result(error: BaseException | str, **detail: Any) -> VerifierResult:
    """Reward 0 for a completion that could not be scored; ``detail['error']`` says why ('Type: message')."""
    message = error if isinstance(error, str) else describe_error(error)
    return VerifierResult(reward=0.0, correct=False, detail={**detail, "error": message})


def absent_result(reason: str, /, **detail: Any) -> VerifierResult:
    """No score for a completion: the model or endpoint failed, or its output could not be parsed.

    Reward ``nan`` (never 0: a failed call says nothing about the completion), correct False, and
    ``detail['absent']`` says why (``detail['reason']`` too, unless given, for the rollout browser). ``score_batch``
    keeps it out of the total and ``reward_absence`` decides whether the sample is dropped, scored 0 or fails the run.
    """
    return VerifierResult(
        reward=math.nan, correct=False, detail={"reason": f"absent: {reason}", **detail, "absent": reason}
    )


def _length_problem(completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult] | None:
    if len(completions) == len(samples):
        return None
    problem = f"got {len(completions)} completions but {len(samples)} samples: pass one sample per completion"
    return [error_result(problem) for _ in completions]


def score_each(
    completions: Sequence[str], samples: Sequence[Sample], score_one: Callable[[str, Sample], VerifierResult]
) -> list[VerifierResult]:
    """Apply ``score_one`` to every (completion, sample) pair, turning any exception into ``error_result``.

    Always returns one result per completion, so a verifier built on it keeps the never-raise contract.
    """
    mismatch = _length_problem(completions, samples)
    if mismatch is not None:
        return mismatch
    results = []
    for completion, sample in zip(completions, samples, strict=True):
        try:
            results.append(score_one(completion, sample))
        except Exception as err:
            results.append(error_result(err))
    return results


def score_whole_batch(
    completions: Sequence[str],
    samples: Sequence[Sample],
    score: Callable[[Sequence[str], Sequence[Sample]], list[VerifierResult]],
) -> list[VerifierResult]:
    """``score_each`` for verifiers that score a batch at once (e.g. in the timeout pool).

    Checks the lengths, and turns an exception of ``score`` into one error result per completion, except
    ``PoolStartError``: a process pool that cannot start is an environment fault, and turning it into
    rewards of 0 for every sample would train on silence, so it propagates.
    """
    mismatch = _length_problem(completions, samples)
    if mismatch is not None:
        return mismatch
    try:
        results = score(completions, samples)
    except PoolStartError:
        raise
    except Exception as err:
        return [error_result(err) for _ in completions]
    if len(results) != len(completions):
        return [error_result(f"scored {len(results)} of {len(completions)} completions") for _ in completions]
    return results
