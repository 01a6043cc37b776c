"""A multi-turn rollout's episode for the rollout browser: ``details["episode"]`` checked against the rollout's
tokens and reshaped for the page, which shows it turn by turn and marks the environment's tokens in the token
view (static/js/episode_view.js, static/js/token_view.js).

The trainer writes the record (trainer/environments/records.py ``EpisodeRecord.to_json``): per turn a model span
and the environment's reply span, both half-open ``[start, end)`` indices into the completion's tokens, how the
model's turn ended, the turn's reward and its tool calls; per episode how it ended and the final score. The
ingest API refuses a malformed one from outside (webapp/ingest/episode.py); this check still guards the page,
since a stored record may predate either, and a record it cannot draw is shown as unreadable, never an error.
Keys the page does not know (``info``, anything a later trainer adds) are left out.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_TURNS = 64  # the trainer's own bound (trainer/environments/limits.py max_turns)
MAX_CALLS = 33  # per turn: the trainer's 32 calls, plus the one entry saying the rest were dropped
MAX_NAME = 200  # characters of a tool's name
MAX_TEXT = 100_000  # characters of a tool's result or its arguments as JSON; longer is cut for the page
UNREADABLE = "turn data unreadable"
TURN_FINISHES = ("eos", "stop", "length")
EPISODE_FINISHES = ("done", "turns", "length")
TOOL_STATUSES = ("ok", "error", "timeout", "invalid")


class _Unreadable(ValueError):
    """Why a rollout's ``details["episode"]`` cannot be drawn."""


def _number(value: Any) -> float | None:
    """A finite number, else None: the trainer writes a reward it could not compute as null or as ``"nan"``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _clipped(text: str) -> str:
    return (
        text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT]}\n[... {len(text) - MAX_TEXT} more characters]"
    )


def _span(value: Any, where: str, start_at: int, token_count: int) -> tuple[int, int]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or any(isinstance(x, bool) or not isinstance(x, int) for x in value)
    ):
        raise _Unreadable(f"{where}: a span is two token indices")
    start, end = value
    if not start_at <= start <= end <= token_count:
        raise _Unreadable(f"{where} [{start}, {end}) is out of order or outside the {token_count} tokens")
    return start, end


def _arguments(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Unreadable(f"{where}: arguments are an object or null")
    return _clipped(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise _Unreadable(f"{where} is not an object")
    status, name, result = call.get("status"), call.get("name", ""), call.get("result", "")
    if status not in TOOL_STATUSES:
        raise _Unreadable(f"{where}: status is one of {', '.join(TOOL_STATUSES)}")
    if not isinstance(name, str) or not isinstance(result, str):
        raise _Unreadable(f"{where}: name and result are text")
    return {
        "name": name[:MAX_NAME],
        "arguments": _arguments(call.get("arguments"), where),
        "status": status,
        "seconds": _number(call.get("seconds")),
        "result": _clipped(result),
    }


def _turn(turn: Any, k: int, previous_end: int, token_count: int) -> dict[str, Any]:
    where = f"turn {k + 1}"
    if not isinstance(turn, dict):
        raise _Unreadable(f"{where} is not an object")
    model = _span(turn.get("model_span"), f"{where}: model span", previous_end, token_count)
    env = _span(turn.get("env_span"), f"{where}: environment span", model[1], token_count)
    if turn.get("finish") not in TURN_FINISHES:
        raise _Unreadable(f"{where}: finish is one of {', '.join(TURN_FINISHES)}")
    calls = turn.get("tool_calls", [])
    if not isinstance(calls, list) or len(calls) > MAX_CALLS:
        raise _Unreadable(f"{where}: tool calls are a list of at most {MAX_CALLS}")
    return {
        "model": list(model),
        "env": list(env),
        "finish": turn["finish"],
        "reward": _number(turn.get("reward")),
        "reply_truncated": turn.get("reply_truncated") is True,
        "tool_calls": [_tool_call(c, f"{where}: tool call {j + 1}") for j, c in enumerate(calls)],
    }


def _episode(episode: Any, token_count: int) -> dict[str, Any]:
    if not isinstance(episode, dict):
        raise _Unreadable("episode is not an object")
    turns = episode.get("turns")
    if not isinstance(turns, list) or not turns:
        raise _Unreadable("turns is a list of at least one turn")
    if len(turns) > MAX_TURNS:
        raise _Unreadable(f"{len(turns)} turns, more than the {MAX_TURNS} the page draws")
    if episode.get("finish_reason") not in EPISODE_FINISHES:
        raise _Unreadable(f"finish_reason is one of {', '.join(EPISODE_FINISHES)}")
    shown = []
    previous_end = 0
    for k, turn in enumerate(turns):
        shown.append(_turn(turn, k, previous_end, token_count))
        previous_end = shown[-1]["env"][1]
    score = episode.get("score")
    score = score if isinstance(score, dict) else {}
    correct = score.get("correct")
    return {
        "turns": shown,
        "finish_reason": episode["finish_reason"],
        "reward": _number(score.get("reward")),
        "correct": correct if isinstance(correct, bool) else None,
    }


def rollout_episode(*, details: Any, token_count: int) -> dict[str, Any] | None:
    """What the page draws of a multi-turn rollout: None when the record has no ``details["episode"]``;
    ``{"error": "turn data unreadable", "reason"}`` when it is malformed; else ``{"turns": [{"model": [start, end],
    "env": [start, end], "finish", "reward", "reply_truncated", "tool_calls": [{"name", "arguments" (compact JSON
    or None), "status", "seconds", "result"}]}], "finish_reason", "reward", "correct"}``: at most ``MAX_TURNS``
    turns whose spans lie in order, without overlap, within the completion's ``token_count`` tokens."""
    if not isinstance(details, dict) or "episode" not in details:
        return None
    try:
        return _episode(details["episode"], token_count)
    except _Unreadable as exc:
        return {"error": UNREADABLE, "reason": str(exc)}


def episode_turn_count(details: Any) -> int | None:
    """How many turns a rollout's episode took, for the table ("3 turns"); None for a single-turn rollout."""
    episode = details.get("episode") if isinstance(details, dict) else None
    turns = episode.get("turns") if isinstance(episode, dict) else None
    return len(turns) if isinstance(turns, list) else None
