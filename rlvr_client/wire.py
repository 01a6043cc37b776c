"""What one ingest batch looks like on the wire, and the client-side checks that catch mistakes early.

A batch is one JSON object (webapp/ingest/schema.py validates it on the server, which is the authority):

    {"version": 1, "run": {"project": SLUG, "key": KEY, "name": ..., "experiment": ..., "config": {...},
     "source": "trl", "source_info": {...}, "max_steps": N, "retention": {...}},
     "metrics": [{"step": 1, "values": {"rollout/reward_mean": 0.3, "actor/kl": null}}],
     "rollouts": [{"step": 1, "group": 0, "sample_index": 0, ...trainer.sinks.RolloutRecord fields...}],
     "checkpoints": [{"step": 10, "uri": "/ckpt/step-10"}],
     "finish": {"status": "succeeded", "final_metrics": {...}, "error_message": ""},
     "rollouts_dropped": 0}

``rollouts_dropped`` (optional) is how many rollouts of the run the client moved to its spool's rejected/
folder so far (the server refused them for good); the run keeps the largest count it hears. Numbers are
strict on the server: an integer is a JSON integer (not ``"3"``, ``true`` or ``3.0``).

Every batch names its run in full, so a batch read back from the spool after a crash (or sent twice when an
answer was lost) is self-sufficient: the server makes the run on the first batch it sees with that key and
applies every item idempotently (metrics by step and key, rollouts by step, group and sample index).
NaN and infinities are not JSON: they travel as null ("not recorded").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

WIRE_VERSION = 1
SOURCES = ("trl", "verl", "script", "import")
FINISH_STATUSES = ("succeeded", "failed", "cancelled")
# Field names of trainer.sinks.RolloutRecord (and TOKEN_CHANNELS), repeated here so the client imports
# neither the trainer package nor its dependencies; tests/webapp/ingest checks that they agree.
ROLLOUT_FIELDS = (
    "prompt_id",
    "group",
    "sample_index",
    "prompt",
    "completion",
    "finish_reason",
    "reward",
    "rewards",
    "correct",
    "details",
    "advantage",
    "token_ids",
    "tokens",
    "token_values",
    "answer",
)
TOKEN_CHANNELS = (
    "logprob",
    "old_logprob",
    "ref_logprob",
    "entropy",
    "advantage",
    "loss_mask",
    "teacher_logprob",
    "teacher_entropy",
    "segment",
    "step_score",
    "env_token",
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class IngestError(Exception):
    """Something the caller can fix (a bad value, no credentials, a refused batch); the message says how."""


def finite_or_none(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    number = float(value)
    return number if math.isfinite(number) else None


def clean_values(values: Mapping[str, Any], where: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise IngestError(f"{where}: metric names must be non-empty strings, got {key!r}")
        try:
            out[key] = finite_or_none(value)
        except (TypeError, ValueError):
            raise IngestError(f"{where}: {key} must be a number, got {type(value).__name__}") from None
    return out


def check_step(step: Any, where: str) -> int:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise IngestError(f"{where}: step must be a non-negative integer, got {step!r}")
    return step


def storable_text(text: Any) -> str:
    """``text`` with NUL characters and lone surrogates (model output can hold both; neither is storable
    text, and the server refuses a body holding them) replaced by U+FFFD."""
    text = str(text)
    if "\x00" in text or _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub("\ufffd", text.replace("\x00", "\ufffd"))
    return text


def plain_json(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON: non-finite floats -> null, numpy/torch scalars -> numbers, tuples -> lists,
    keys -> strings, anything else -> its ``str``. Configs and verifier details come from user code."""
    if depth > 32:
        return str(value)[:1000]
    if value is None or isinstance(value, (bool, str)):
        return storable_text(value) if isinstance(value, str) else value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {storable_text(k): plain_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v, depth + 1) for v in value]
    if hasattr(value, "tolist"):
        return plain_json(value.tolist(), depth + 1)
    return storable_text(str(value))


def check_rollout(step: int, rollout: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The caller-side check, cheap enough for the training thread (lengths, not values): known fields,
    a slot, token arrays of one length. Returns a shallow copy with the step; ``clean_rollout`` (on the
    sender thread) converts the values."""
    unknown = sorted(set(rollout) - set(ROLLOUT_FIELDS) - {"step"})
    if unknown:
        raise IngestError(
            f"{where}: unknown field(s) {', '.join(unknown)}; the fields are {', '.join(ROLLOUT_FIELDS)}"
        )
    for name in ("group", "sample_index"):
        value = rollout.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise IngestError(
                f"{where}: {name} must be a non-negative integer (the slot of the rollout in its step)"
            )
    out: dict[str, Any] = {**{k: v for k, v in rollout.items() if k != "step"}, "step": step}
    tokens, ids = out.get("tokens"), out.get("token_ids")
    if ids is not None and tokens is not None and len(ids) != len(tokens):
        raise IngestError(
            f"{where}: token_ids has {len(ids)} entries and tokens {len(tokens)}: give one per token"
        )
    length = len(tokens) if tokens is not None else (len(ids) if ids is not None else 0)
    for channel, values in dict(out.get("token_values") or {}).items():
        if channel not in TOKEN_CHANNELS:
            raise IngestError(
                f"{where}: unknown token channel {channel!r}; the channels are {', '.join(TOKEN_CHANNELS)}"
            )
        if len(values) != length:
            raise IngestError(f"{where}: token_values.{channel} has {len(values)} values for {length} tokens")
    return out


def clean_rollout(rollout: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A checked rollout as the wire wants it: plain ints, floats finite or null, storable text."""
    out = dict(rollout)
    if "details" in out:
        out["details"] = plain_json(out["details"])
    for name in ("prompt", "completion", "prompt_id", "finish_reason", "answer"):
        if out.get(name) is not None:
            out[name] = storable_text(out[name])
    if out.get("correct") is not None:
        correct = (
            out["correct"].item() if hasattr(out["correct"], "item") else out["correct"]
        )  # numpy's bool_
        if not isinstance(correct, bool):
            raise IngestError(f"{where}.correct must be True, False or None (unknown), got {correct!r}")
        out["correct"] = correct
    for name in ("reward", "advantage"):
        if name in out:
            out[name] = _number(out[name], f"{where}.{name}")
    if "rewards" in out:
        out["rewards"] = {str(k): _number(v, f"{where}.rewards.{k}") for k, v in dict(out["rewards"]).items()}
    if out.get("token_ids") is not None:
        out["token_ids"] = [int(t) for t in _sequence(out["token_ids"])]
    if out.get("tokens") is not None:
        out["tokens"] = [storable_text(t) for t in out["tokens"]]
    if out.get("token_values"):
        out["token_values"] = {
            channel: [_number(v, f"{where}.token_values.{channel}") for v in _sequence(values)]
            for channel, values in dict(out["token_values"]).items()
        }
    return out


def rollout_payload(step: int, rollout: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Both checks at once (importers, which have no training thread to spare)."""
    return clean_rollout(check_rollout(step, rollout, where), where)


def _sequence(values: Any) -> Sequence[Any]:
    if hasattr(values, "tolist"):  # numpy arrays and torch tensors, without importing either
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise IngestError(f"token values must be a list, got {type(values).__name__}")
    return values


def _number(value: Any, where: str) -> float | None:
    if hasattr(value, "item"):
        value = value.item()
    try:
        return finite_or_none(value)
    except (TypeError, ValueError):
        raise IngestError(f"{where} must be a number or null, got {type(value).__name__}") from None
