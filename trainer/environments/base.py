"""The environment seam: what a multi-turn episode sees of a task, and the registry of built-in environments.

The native contract is modelled on OpenEnv's ``reset`` / ``step`` / ``state`` so an adapter to it stays thin: ``reset``
starts an episode on a Sample, ``step`` takes one model turn (its text and the results of the tool calls it made)
and answers with an ``Observation`` (text for the model, this turn's reward, whether the episode is over),
``state`` says where the episode is. Beyond OpenEnv: the tools an environment exposes (run by the driver, with its
limits and timeouts, so every environment gets the same guarantees) and ``final_score``, the episode's reward,
asked once when the episode ends for any reason (done, turn budget, token budget).

An environment instance runs one episode at a time; the driver builds one per episode (``build_environment``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pydantic import ValidationError

from trainer.bounds import BoundedModel
from trainer.environments.records import ToolCallRecord
from trainer.environments.tools import Tool
from trainer.errors import ConfigError
from trainer.registry import Registry
from trainer.samples import Sample
from trainer.verifiers.base import VerifierResult

# (model turn text, sample) -> the task's score of it: the run's verifiers combined (scoring.verifier_scorer).
AnswerScorer = Callable[[str, Sample], VerifierResult]


@dataclass(frozen=True)
class Observation:
    """What the environment answers to ``reset`` or to a turn.

    ``text`` is shown to the model before its next turn (after the responses of the turn's tool calls, which the
    driver renders); ``reward`` is this turn's own reward (None: the turn has none, e.g. a tool call); ``done`` ends
    the episode. ``info`` holds JSON-serialisable facts for the rollout record.
    """

    text: str = ""
    reward: float | None = None
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelTurn:
    """One turn of the model: its decoded text (special tokens removed) and the tool calls it made, already run."""

    index: int  # 0-based turn number in the episode
    text: str
    tool_calls: tuple[ToolCallRecord, ...] = ()


@dataclass(frozen=True)
class EnvState:
    """Where an episode is (OpenEnv's ``State``: an episode id and a step count)."""

    episode_id: str
    turns: int
    done: bool


class EnvironmentParams(BoundedModel):
    """Base of each environment's parameter model: unknown keys refused, every value bounded."""


class Environment(Protocol):
    """A multi-turn task. Never called from two threads at once; ``step`` only between ``reset`` and the episode's end."""

    def tools(self) -> Sequence[Tool]:
        """The functions the model may call (empty: none; tool calls in its text are then plain text)."""
        ...

    def reset(self, sample: Sample) -> Observation:
        """Start an episode on ``sample``; the observation's text follows the rendered prompt (usually empty)."""
        ...

    def step(self, turn: ModelTurn) -> Observation: ...

    def state(self) -> EnvState: ...

    def final_score(self) -> VerifierResult:
        """The episode's reward, asked once when it has ended (done, or cut by a budget)."""
        ...


class RegisteredEnvironment(Environment, Protocol):
    """An environment class in the registry: its name, its ``Params`` model, built as ``cls(params, scorer)``."""

    name: ClassVar[str]
    Params: ClassVar[type[EnvironmentParams]]
    # Whether a turn gets its own reward (self-correction: each answer scored), so turn-level credit has scores to
    # use; False: only the episode's final score (a tool task).
    turn_rewards: ClassVar[bool]


ENVIRONMENTS: Registry[type[RegisteredEnvironment]] = Registry("environment")


def environment_params(name: str, params: dict[str, Any] | None = None) -> EnvironmentParams:
    """``params`` validated by environment ``name``'s own model; ConfigError naming each problem and the valid keys."""
    cls = ENVIRONMENTS.get(name)
    try:
        return cls.Params.model_validate(params or {})
    except ValidationError as err:
        problems = []
        for e in err.errors():
            where = ".".join(str(p) for p in e["loc"]) or "params"
            if e["type"] == "extra_forbidden":
                problems.append(f"{where}: unknown parameter; valid: {', '.join(cls.Params.model_fields)}")
            else:
                problems.append(f"{where}: {e['msg'].removeprefix('Value error, ')}")
        raise ConfigError(f"environment {name!r} has invalid params: {'; '.join(problems)}") from None


def environment_factory(
    name: str, params: dict[str, Any] | None, scorer: AnswerScorer
) -> Callable[[], Environment]:
    """A builder of fresh environments ``name`` (one per episode), its params validated once, here."""
    cls = ENVIRONMENTS.get(name)
    validated = environment_params(name, params)
    return lambda: cls(validated, scorer)  # type: ignore[call-arg]
