"""The ingest batch, validated: what ``rlvr_client/wire.py`` sends, with a bound on everything.

Pydantic rather than DRF serializers: a batch can hold 100,000s of per-token floats, which a DRF
``ListField(child=FloatField())`` validates one Python call each (seconds); pydantic's core does it in
milliseconds. The body has already passed the strict JSON reader (no NUL, lone surrogates, NaN or deep
nesting; webapp/ingest/parsers.py). Errors become ``InvalidInput`` keyed by the dotted field path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from trainer.sinks import TOKEN_CHANNELS
from webapp.core.errors import InvalidInput
from webapp.ingest.episode import check_episode

MAX_STEP = 10**9
MAX_METRIC_POINTS = 20_000  # (step, values) entries per batch
MAX_METRIC_KEYS = 1_000  # keys in one step's values
MAX_ROLLOUTS = 1_024  # per batch
MAX_TOKENS = 131_072  # per rollout
MAX_TEXT = 1_000_000  # characters of a prompt or completion
MAX_CHECKPOINTS = 100

Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Key = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
Step = Annotated[int, Field(ge=0, le=MAX_STEP)]
Number = float | None


class _Strict(BaseModel):
    """Strict as a class: a number is a JSON number, never a string (``"step": "3"``), a bool (``true`` is not
    1) or, for an integer field, a float (``3.0``); a bool is ``true``/``false``; NaN and infinities are
    refused. Integers are accepted where a float is asked (JSON does not tell ``1`` from ``1.0``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class RunIn(_Strict):
    project: Annotated[str, StringConstraints(min_length=1, max_length=140)]
    key: Key
    name: Name
    experiment: Name | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    source: Literal["trl", "verl", "script", "import"] = "script"
    source_info: dict[str, Any] = Field(default_factory=dict)
    max_steps: Step = 0
    retention: dict[str, Any] | None = None


class MetricsIn(_Strict):
    step: Step
    values: dict[Annotated[str, StringConstraints(min_length=1, max_length=200)], Number] = Field(
        max_length=MAX_METRIC_KEYS
    )


class RolloutIn(_Strict):
    step: Step
    group: Annotated[int, Field(ge=0, le=1_000_000)]
    sample_index: Annotated[int, Field(ge=0, le=1_000_000)]
    prompt_id: Annotated[str, StringConstraints(max_length=255)] = ""
    prompt: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""
    completion: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""
    answer: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = None
    finish_reason: Annotated[str, StringConstraints(max_length=32)] = "eos"
    reward: Number = None
    rewards: dict[Name, Number] = Field(default_factory=dict, max_length=64)
    correct: bool | None = None
    details: dict[Name, dict[str, Any]] = Field(default_factory=dict, max_length=64)
    advantage: Number = None
    token_ids: list[Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]] | None = Field(
        default=None, max_length=MAX_TOKENS
    )
    tokens: list[Annotated[str, StringConstraints(max_length=1_000)]] | None = Field(
        default=None, max_length=MAX_TOKENS
    )
    token_values: dict[str, list[Number]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _arrays_agree(self) -> RolloutIn:
        ids, tokens = self.token_ids, self.tokens
        if ids is not None and tokens is not None and len(ids) != len(tokens):
            raise ValueError(f"token_ids has {len(ids)} entries and tokens {len(tokens)}: give one per token")
        length = len(tokens) if tokens is not None else len(ids or [])
        for channel, values in self.token_values.items():
            if channel not in TOKEN_CHANNELS:
                raise ValueError(
                    f"unknown token channel {channel!r}; the channels are {', '.join(TOKEN_CHANNELS)}"
                )
            if len(values) != length:
                raise ValueError(f"token_values.{channel} has {len(values)} values for {length} tokens")
        if "episode" in self.details:  # a multi-turn rollout: its turns index these tokens
            check_episode(self.details["episode"], length)
        return self


class CheckpointIn(_Strict):
    step: Step
    uri: Annotated[str, StringConstraints(min_length=1, max_length=1024)]


class FinishIn(_Strict):
    status: Literal["succeeded", "failed", "cancelled"]
    final_metrics: dict[Name, Number] = Field(default_factory=dict, max_length=MAX_METRIC_KEYS)
    error_message: Annotated[str, StringConstraints(max_length=10_000)] = ""


class BatchIn(_Strict):
    version: Literal[1] = 1
    run: RunIn
    metrics: list[MetricsIn] = Field(default_factory=list, max_length=MAX_METRIC_POINTS)
    rollouts: list[RolloutIn] = Field(default_factory=list, max_length=MAX_ROLLOUTS)
    checkpoints: list[CheckpointIn] = Field(default_factory=list, max_length=MAX_CHECKPOINTS)
    finish: FinishIn | None = None
    # How many rollouts of the run the client could not deliver so far (kept in its spool's rejected/ folder);
    # the client counts them itself, so a resent batch repeats the same number: the largest one is kept.
    rollouts_dropped: Annotated[int, Field(ge=0, le=MAX_STEP)] | None = None

    @model_validator(mode="after")
    def _slots_unique(self) -> BatchIn:
        seen: set[tuple[int, int, int]] = set()
        for r in self.rollouts:
            slot = (r.step, r.group, r.sample_index)
            if slot in seen:
                raise ValueError(
                    f"two rollouts of step {r.step} share group {r.group} and sample_index {r.sample_index}: "
                    "give each completion of a step its own (group, sample_index)"
                )
            seen.add(slot)
        return self


def parse_batch(data: Any) -> BatchIn:
    """The batch, or ``InvalidInput`` naming each wrong field (at most 20)."""
    if not isinstance(data, dict):
        raise InvalidInput("The body must be a JSON object (an ingest batch).", {"(body)": ["not an object"]})
    try:
        return BatchIn.model_validate(data)
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for problem in err.errors()[:20]:
            path = ".".join(str(p) for p in problem["loc"]) or "(body)"
            fields.setdefault(path, []).append(str(problem["msg"]))
        first = next(iter(fields))
        raise InvalidInput(f"The ingest batch is not valid: {first}: {fields[first][0]}", fields) from None
