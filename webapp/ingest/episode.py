"""A multi-turn rollout's ``details["episode"]`` from outside, validated: the shape the native trainer writes
(trainer/environments/records.py ``EpisodeRecord.to_json``), with a bound on everything, and spans that index the
rollout's own tokens. An outside client (TRL, verl, a script) may then send multi-turn rollouts, and the rollout
browser draws them turn by turn like the native trainer's (webapp/pages/selectors_episodes.py).

Checked by ``RolloutIn`` (schema.py) when a rollout's details carry ``episode``; a problem is reported with its
dotted path inside the episode (``details.episode.turns.2.env_span: ...``), in the ingest API's one error shape.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

MAX_TURNS = 64  # the native trainer's own bound (trainer/environments/limits.py max_turns)
MAX_CALLS_PER_TURN = 33  # the trainer's 32 calls a turn, plus the one entry saying the rest were dropped
MAX_RESULT = 70_000  # characters of one tool result (the trainer cuts at 65,536 and says how much it cut)
MAX_ARGUMENTS = 65_536  # characters of one call's arguments as JSON (the trainer's max_argument_chars bound)
MAX_INFO = 10_000  # characters of a turn's ``info`` or the score's ``detail`` as JSON
MAX_EPISODE_TEXT = 1_000_000  # characters of all tool results and arguments of one episode together
MAX_SECONDS = 86_400.0

# [start, end): half-open token indices into the rollout's ``token_ids`` / ``tokens`` (a JSON array of two)
Span = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
Number = float | None


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _bounded_object(value: dict[str, Any] | None, limit: int) -> dict[str, Any] | None:
    if value is not None and _json_chars(value) > limit:
        raise ValueError(f"at most {limit:,} characters as JSON")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class ToolCallIn(_Strict):
    name: Annotated[str, StringConstraints(max_length=200)]  # "" when the call could not be read
    arguments: dict[str, Any] | None  # None when the call could not be read
    result: Annotated[str, StringConstraints(max_length=MAX_RESULT)]
    status: Literal["ok", "error", "timeout", "invalid"]
    seconds: Annotated[float, Field(ge=0.0, le=MAX_SECONDS)]

    @field_validator("arguments")
    @classmethod
    def _arguments_bounded(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _bounded_object(value, MAX_ARGUMENTS)


class TurnIn(_Strict):
    model_span: Span
    env_span: Span  # empty ([k, k]) when no reply followed the turn
    finish: Literal["eos", "stop", "length"]
    reward: Number = None
    tool_calls: list[ToolCallIn] = Field(default_factory=list, max_length=MAX_CALLS_PER_TURN)
    reply_truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)

    @field_validator("info")
    @classmethod
    def _info_bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _bounded_object(value, MAX_INFO) or {}


class ScoreIn(_Strict):
    reward: Number
    correct: bool | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    @field_validator("detail")
    @classmethod
    def _detail_bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _bounded_object(value, MAX_INFO) or {}


class EpisodeIn(_Strict):
    turns: list[TurnIn] = Field(min_length=1, max_length=MAX_TURNS)
    finish_reason: Literal["done", "turns", "length"]
    score: ScoreIn


def _span_problem(turns: list[TurnIn], token_count: int) -> str | None:
    """Spans in order and without overlap, each model span before its reply, all within the rollout's tokens."""
    previous_end = 0
    for k, turn in enumerate(turns):
        for name, (start, end), lowest in (
            ("model_span", turn.model_span, previous_end),
            ("env_span", turn.env_span, turn.model_span[1]),
        ):
            if start > end:
                return f"turns.{k}.{name}: [{start}, {end}) ends before it starts"
            if start < lowest:
                return (
                    f"turns.{k}.{name}: [{start}, {end}) overlaps the span before it (which ends at {lowest})"
                )
            if end > token_count:
                return (
                    f"turns.{k}.{name}: [{start}, {end}) reaches past the rollout's {token_count} tokens "
                    "(spans index token_ids / tokens)"
                )
        previous_end = turn.env_span[1]
    return None


def _text_problem(turns: list[TurnIn]) -> str | None:
    total = sum(
        len(call.result) + (0 if call.arguments is None else _json_chars(call.arguments))
        for turn in turns
        for call in turn.tool_calls
    )
    if total > MAX_EPISODE_TEXT:
        return f"turns: the tool calls' results and arguments hold {total:,} characters; at most {MAX_EPISODE_TEXT:,}"
    return None


def check_episode(value: Any, token_count: int) -> None:
    """Raise ``ValueError`` naming the first problem of an outside rollout's ``details["episode"]`` (its path
    inside the episode first), or return when the episode is well formed for a rollout of ``token_count``
    tokens."""
    try:
        episode = EpisodeIn.model_validate(value)
    except ValidationError as err:
        problem = err.errors()[0]
        path = ".".join(str(p) for p in problem["loc"])
        raise ValueError(f"details.episode{'.' + path if path else ''}: {problem['msg']}") from None
    problem_text = _span_problem(episode.turns, token_count) or _text_problem(episode.turns)
    if problem_text is not None:
        raise ValueError(f"details.episode.{problem_text}")
