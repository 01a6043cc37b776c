"""``openenv``: an environment served by an OpenEnv server, run unchanged as a native environment.

OpenEnv (the ``openenv`` package: an environment is an ``Environment`` subclass with pydantic ``Action`` /
``Observation`` / ``State`` models, served by ``create_app``) is the environment standard this project adapts.
The adapter speaks its wire protocol (openenv_wire.py), so the trainer never imports ``openenv`` or its
dependencies (FastAPI, Gradio, FastMCP): the server runs in its own process and Python environment.

The mapping onto the native contract (base.py):

- ``reset(sample)`` opens one WebSocket session (one environment instance on the server) and sends ``reset`` with
  the sample's ``meta["openenv_reset"]`` (a JSON object: the environment's own reset keys) and a ``seed``: the
  object's own, else one derived from the sample id, so the rollouts of a group meet the same task;
- a model turn becomes an action: its text in one string field of the Action (``action_field``, e.g. the
  ``message`` of OpenEnv's echo template), or, with ``action_field: null``, the text read as a JSON object of the
  Action's fields. An action the server's Action model refuses, or text that is not a JSON object, does not step
  the environment: the model is shown why, and the turn has no reward;
- the observation's text is one of its fields (``observation_field``) or, by default, all of them as JSON; its
  ``reward`` and ``done`` (which OpenEnv sends beside the fields) are the turn's reward and done;
- ``final_score`` is the sum (or the last) of the turns' rewards. An episode whose server failed, timed out or
  closed the session, or that got no reward at all, is **absent** (``absent_result``), never a silent 0;
  ``reward_absence`` decides what that means for the run.

Out of scope: OpenEnv's MCP tool environments (``list_tools`` / ``call_tool`` actions, the ``/mcp`` endpoint)
are not mapped onto native tools, and HTTP-only servers (``/reset`` and ``/step`` keep no episode) cannot run
multi-turn episodes. The server must allow as many sessions at once as episodes run at once
(``max_concurrent_envs``; OpenEnv's template allows 1).
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from trainer.bounds import UnsafeInput, strict_json_loads
from trainer.environments.base import (
    ENVIRONMENTS,
    AnswerScorer,
    EnvironmentParams,
    EnvState,
    ModelTurn,
    Observation,
)
from trainer.environments.openenv_wire import (
    MAX_URL_CHARS,
    InvalidAction,
    OpenEnvSession,
    OpenEnvWireError,
    url_problem,
)
from trainer.environments.tools import Tool
from trainer.errors import DataError
from trainer.samples import Sample
from trainer.verifiers.base import VerifierResult, absent_result

RESET_META_KEY = "openenv_reset"
MAX_SEED = 2**31 - 1
MAX_INFO_CHARS = 1000  # an observation's metadata kept in a turn's info (the rollout record) up to this size


class OpenEnvParams(EnvironmentParams):
    base_url: str = Field(
        max_length=MAX_URL_CHARS,
        description="The OpenEnv server's base URL (http, https, ws or wss; e.g. http://127.0.0.1:8000), where "
        "its create_app serves /ws. Only this host and port are reached: no redirect, no proxy.",
    )
    action_field: str | None = Field(
        "message",
        min_length=1,
        max_length=100,
        description="The Action field that receives the model's turn text (OpenEnv's echo template: 'message'). "
        "null: the turn's text is read as a JSON object of the Action's fields.",
    )
    observation_field: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="The Observation field shown to the model after each turn (e.g. 'echoed_message'). null: all "
        "its fields but metadata, as JSON.",
    )
    episode_reward: Literal["sum", "last"] = Field(
        "sum", description="The episode's reward from its turns' rewards: their sum, or the last one given."
    )
    correct_at: float = Field(
        1.0,
        ge=-1e6,
        le=1e6,
        description="An episode counts as correct (rollout/accuracy) at this reward or more.",
    )
    seed_from_sample: bool = Field(
        True,
        description="Send reset a seed derived from the sample id when the sample's meta.openenv_reset has none, "
        "so every rollout of a group meets the same task.",
    )
    connect_timeout_s: float = Field(10.0, ge=0.1, le=300.0, description="Seconds to open a session.")
    message_timeout_s: float = Field(
        60.0,
        ge=0.1,
        le=3600.0,
        description="Seconds to wait for each answer (reset, step); then the episode fails.",
    )
    max_message_bytes: int = Field(
        1 << 20, ge=1024, le=64 << 20, description="Largest message accepted from the server, in bytes."
    )
    max_observation_chars: int = Field(
        8192,
        ge=64,
        le=65_536,
        description="Longest observation text shown to the model; a longer one is cut, with a marker saying so.",
    )

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        problem = url_problem(url)
        if problem:
            raise ValueError(f"base_url {problem}")
        return url


@ENVIRONMENTS.register("openenv")
class OpenEnvEnvironment:
    """One episode on an OpenEnv server, through its own WebSocket session (see the module docstring)."""

    name: ClassVar[str] = "openenv"
    turn_rewards: ClassVar[bool] = True
    Params: ClassVar[type[EnvironmentParams]] = OpenEnvParams

    def __init__(self, params: OpenEnvParams, scorer: AnswerScorer | None = None) -> None:
        # ``scorer`` (the run's verifiers) is not asked: an OpenEnv environment gives its own rewards.
        self.params = params
        self._session: OpenEnvSession | None = None
        self._episode_id = ""
        self._turns = 0
        self._done = False
        self._rewards: list[float] = []
        self._failure: str | None = None

    def tools(self) -> Sequence[Tool]:
        return ()

    def reset(self, sample: Sample) -> Observation:
        kwargs = reset_arguments(sample, self.params.seed_from_sample)
        self._episode_id = uuid.uuid4().hex
        try:
            self._session = OpenEnvSession(
                self.params.base_url,
                connect_timeout_s=self.params.connect_timeout_s,
                message_timeout_s=self.params.message_timeout_s,
                max_message_bytes=self.params.max_message_bytes,
            )
            first = self._session.reset(**kwargs, episode_id=self._episode_id)
        except OpenEnvWireError as err:
            return self._fail(f"reset: {err}")
        if first.reward is not None:
            self._rewards.append(first.reward)
        return self._observe(first.observation, first.reward, first.done, first.metadata)

    def step(self, turn: ModelTurn) -> Observation:
        self._turns += 1
        if self._session is None or self._done:
            return Observation(done=True, info={"error": self._failure or "the episode has ended"})
        action, problem = self._action(turn.text)
        if action is None:
            return Observation(text=f"Invalid action: {problem}", info={"invalid_action": problem})
        try:
            result = self._session.step(action)
        except InvalidAction as err:
            return Observation(text=f"Invalid action: {err}", info={"invalid_action": str(err)})
        except OpenEnvWireError as err:
            return self._fail(f"step {self._turns}: {err}")
        if result.reward is not None:
            self._rewards.append(result.reward)
        return self._observe(result.observation, result.reward, result.done, result.metadata)

    def state(self) -> EnvState:
        """Kept on this side (the driver asks every turn): no round trip to the server."""
        return EnvState(episode_id=self._episode_id, turns=self._turns, done=self._done)

    def final_score(self) -> VerifierResult:
        self.close()
        p = self.params
        if self._failure is not None:
            return absent_result(self._failure, episode_id=self._episode_id, turns=self._turns)
        if not self._rewards:
            return absent_result("the OpenEnv environment gave no reward", episode_id=self._episode_id)
        reward = sum(self._rewards) if p.episode_reward == "sum" else self._rewards[-1]
        if not math.isfinite(reward):
            return absent_result(f"the OpenEnv rewards {self._rewards} do not sum to a finite number")
        detail = {
            "rewards": self._rewards,
            "done": self._done,
            "turns": self._turns,
            "episode_id": self._episode_id,
        }
        return VerifierResult(reward=reward, correct=reward >= p.correct_at, detail=detail)

    def close(self) -> None:
        """End the server-side session (idempotent); ``final_score`` calls it."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def _action(self, text: str) -> tuple[dict[str, Any] | None, str]:
        if self.params.action_field is not None:
            return {self.params.action_field: text}, ""
        body = text.strip()
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end < start:
            return None, "the turn holds no JSON object; answer with a JSON object of the action's fields"
        try:
            action = strict_json_loads(body[start : end + 1], max_depth=16)
        except (UnsafeInput, ValueError) as err:
            return None, f"the turn's JSON object does not parse ({' '.join(str(err).split())[:200]})"
        if not isinstance(action, dict):
            return None, "the action must be a JSON object of the action's fields"
        return action, ""

    def _observe(
        self, fields: dict[str, Any], reward: float | None, done: bool, metadata: dict[str, Any]
    ) -> Observation:
        self._done = done
        if done:
            self.close()
        name = self.params.observation_field
        if name is None:
            shown: Any = {k: v for k, v in fields.items() if k != "metadata"}
        elif name in fields:
            shown = fields[name]
        else:
            valid = ", ".join(sorted(fields)) or "(none)"
            return self._fail(
                f"the observation has no field {name!r} (observation_field); its fields: {valid}"
            )
        text = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False, sort_keys=True)
        limit = self.params.max_observation_chars
        if len(text) > limit:
            text = text[:limit] + f"\n[cut: {len(text) - limit} more characters]"
        info: dict[str, Any] = {"episode_id": self._episode_id}
        if metadata:
            dumped = json.dumps(metadata, ensure_ascii=False)
            info["metadata"] = metadata if len(dumped) <= MAX_INFO_CHARS else {"chars": len(dumped)}
        return Observation(text=text, reward=reward, done=done, info=info)

    def _fail(self, reason: str) -> Observation:
        self._failure = f"OpenEnv {reason}"
        self._done = True
        self.close()
        return Observation(done=True, info={"error": self._failure})


def reset_arguments(sample: Sample, seed_from_sample: bool) -> dict[str, Any]:
    """The keys ``reset`` is sent for ``sample``: its ``meta["openenv_reset"]`` and a seed (see the module doc)."""
    given = sample.meta.get(RESET_META_KEY, {})
    if not isinstance(given, dict):
        raise DataError(
            f"sample {sample.id!r}: meta.{RESET_META_KEY} must be a JSON object of the environment's reset keys, "
            f"not {type(given).__name__}"
        )
    if "episode_id" in given:
        raise DataError(
            f"sample {sample.id!r}: meta.{RESET_META_KEY} may not set episode_id (each episode has its own)"
        )
    kwargs = dict(given)
    if seed_from_sample and "seed" not in kwargs:
        digest = hashlib.sha256(sample.id.encode("utf-8")).digest()
        kwargs["seed"] = int.from_bytes(digest[:4], "big") & MAX_SEED
    return kwargs
