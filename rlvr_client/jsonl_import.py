"""Read a finished run from files, checking every line before anything is sent: ``rlvr import``'s reader.

Two layouts are read here (docs/ingest_format.md is the spec); verl's rollout dump is read by
rlvr_client/verl.py into the same items:

- an RLVR ingest file (``.jsonl``): a ``run`` line, then ``metrics`` / ``rollout`` / ``checkpoint`` lines in
  any order, and optionally one ``finish`` line, last;
- a run directory of our own trainer (``rlvr train``): trainer/sinks.py JsonlSink's ``metrics.jsonl``,
  ``rollouts.jsonl`` and ``events.jsonl``.

A reader yields a ``RunHeader`` first, then ``Metrics`` / ``Rollout`` / ``Checkpoint`` / ``Finish`` items.
``scan`` reads everything once: it checks each line (an error names the file, the line and the field, so
a bad line 90,000 stops the import before a run exists), checks what spans lines (one rollout per slot,
``finish`` last), counts, and hashes the bytes read, which gives the run its idempotency key. The
sender then reads the files a second time; nothing but the slots seen is held in memory.

Bounds follow the server's (webapp/ingest/schema.py; tests/integrations/test_jsonl_import.py checks they
agree), so a file that passes here is not refused there. Imports neither Django nor torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr_client.wire import (
    FINISH_STATUSES,
    ROLLOUT_FIELDS,
    SOURCES,
    TOKEN_CHANNELS,
    IngestError,
    rollout_payload,
    storable_text,
)

FORMAT_VERSION = 1  # the "version" of a run line; a reader refuses newer versions by name
LINE_TYPES = ("run", "metrics", "rollout", "checkpoint", "finish")
# The server's bounds (webapp/ingest/schema.py), repeated so the client needs no Django.
MAX_STEP = 10**9
MAX_NAME = 200  # run, experiment, metric, reward and detail names
MAX_METRIC_KEYS = 1_000  # per step
MAX_TEXT = 1_000_000  # characters of a prompt, completion or answer
MAX_TOKEN_TEXT = 1_000  # characters of one token string
MAX_PROMPT_ID = 255
MAX_FINISH_REASON = 32
MAX_REWARD_KEYS = 64  # entries of ``rewards`` and of ``details``
MAX_URI = 1_024
MAX_ERROR_MESSAGE = 10_000
MAX_JSON_DEPTH = (
    48  # free-form values (config, details): the server's strict reader allows 64 for the whole batch
)
TRAINER_FILES = ("metrics.jsonl", "rollouts.jsonl", "events.jsonl")


@dataclass(frozen=True)
class Limits:
    """How much one import may hold; the defaults fit the server's (``--max-*`` options change them)."""

    line_bytes: int = 16 * 2**20  # a rollout with 32k tokens and five channels is ~4 MB of JSON
    lines: int = 5_000_000  # over all files
    tokens: int = 131_072  # per rollout (webapp/ingest/schema.py MAX_TOKENS)


class ImportFileError(IngestError):
    """A line that cannot be imported: ``where`` is ``FILE:LINE``, ``field`` the dotted field ('' for the line)."""

    def __init__(self, where: str, field_name: str, problem: str) -> None:
        super().__init__(f"{where}: {field_name}: {problem}" if field_name else f"{where}: {problem}")
        self.where = where
        self.field = field_name
        self.problem = problem


@dataclass
class RunHeader:
    """The run as a ``run`` line (or a directory) describes it; ``max_steps`` 0 means: the last step read."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    source: str = "import"
    source_info: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 0
    experiment: str | None = None


@dataclass(frozen=True)
class Metrics:
    where: str
    step: int
    values: dict[str, float | None]


@dataclass(frozen=True)
class Rollout:
    where: str
    step: int
    fields: dict[str, Any]  # rlvr_client/wire.py rollout_payload's shape (with "step")

    @property
    def tokens(self) -> int:
        return len(self.fields.get("tokens") or self.fields.get("token_ids") or ())


@dataclass(frozen=True)
class Checkpoint:
    where: str
    step: int
    uri: str


@dataclass(frozen=True)
class Finish:
    where: str
    status: str
    final_metrics: dict[str, float | None] = field(default_factory=dict)
    error_message: str = ""


Item = Metrics | Rollout | Checkpoint | Finish
Reader = Callable[["Reading"], Iterator["RunHeader | Item"]]


@dataclass
class Reading:
    """One pass over an import's files: the limits, the content hash and how far it got."""

    limits: Limits = field(default_factory=Limits)
    on_bytes: Callable[[int], None] | None = None  # progress: bytes read since the last call
    lines: int = 0
    _hash: Any = field(default_factory=hashlib.sha256)

    def digest(self) -> str:
        return str(self._hash.hexdigest())

    def json_lines(self, path: Path, name: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(where, object)`` for each non-blank line of ``path``; ``name`` (default: the file name) goes into
        the hash, so the same bytes under another name are another import."""
        self._hash.update(f"\0file\0{name or path.name}\0".encode())
        limit = self.limits.line_bytes
        with open(path, "rb") as fh:
            lineno = 0
            while True:
                raw = fh.readline(limit + 1)
                if not raw:
                    return
                lineno += 1
                where = f"{path}:{lineno}"
                if len(raw) > limit and not raw.endswith(b"\n"):
                    raise ImportFileError(
                        where, "", f"the line is longer than {limit:,} bytes (the limit of a line)"
                    )
                self._hash.update(raw)
                if self.on_bytes is not None:
                    self.on_bytes(len(raw))
                if not raw.strip():
                    continue
                self.lines += 1
                if self.lines > self.limits.lines:
                    raise ImportFileError(
                        where, "", f"more than {self.limits.lines:,} lines (the limit of an import)"
                    )
                yield where, _decode(raw, where)


def _decode(raw: bytes, where: str) -> dict[str, Any]:
    try:
        text = raw.rstrip(b"\r\n").decode("utf-8")
    except UnicodeDecodeError as err:
        raise ImportFileError(where, "", f"not UTF-8 text (byte {err.start})") from None
    try:
        value = json.loads(text)  # NaN and Infinity are read (our trainer writes them) and sent as null
    except json.JSONDecodeError as err:
        raise ImportFileError(where, "", f"not valid JSON: {err.msg} (column {err.colno})") from None
    except RecursionError:
        raise ImportFileError(where, "", "JSON nested too deep") from None
    if not isinstance(value, dict):
        raise ImportFileError(where, "", f"each line must be a JSON object, got {type(value).__name__}")
    return value


# --- field checks ------------------------------------------------------------------------------------


def _fail(where: str, name: str, problem: str) -> ImportFileError:
    return ImportFileError(where, name, problem)


def _only(obj: Mapping[str, Any], allowed: tuple[str, ...], where: str, what: str) -> None:
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise _fail(where, unknown[0], f"unknown field in a {what}; its fields are {', '.join(allowed)}")


def step_of(obj: Mapping[str, Any], where: str, name: str = "step") -> int:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STEP:
        raise _fail(where, name, f"must be an integer from 0 to {MAX_STEP:,}, got {value!r}")
    return value


def text_of(
    obj: Mapping[str, Any],
    name: str,
    where: str,
    *,
    limit: int,
    required: bool = False,
    default: str | None = None,
) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise _fail(where, name, "is required (a string)")
        return default
    if not isinstance(value, str):
        raise _fail(where, name, f"must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise _fail(where, name, f"has {len(value):,} characters; at most {limit:,}")
    return storable_text(value)


def number_or_none(value: Any, where: str, name: str) -> float | None:
    """A finite float, or None for null / NaN / infinity ("not recorded"); anything else is an error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where, name, f"must be a number or null, got {type(value).__name__} {str(value)[:40]!r}")
    number = float(value)
    return number if math.isfinite(number) else None


def metric_values(obj: Any, where: str, name: str) -> dict[str, float | None]:
    if not isinstance(obj, dict):
        raise _fail(where, name, f"must be an object of metric name -> number, got {type(obj).__name__}")
    if len(obj) > MAX_METRIC_KEYS:
        raise _fail(where, name, f"has {len(obj):,} metrics; at most {MAX_METRIC_KEYS:,} per step")
    values: dict[str, float | None] = {}
    for key, value in obj.items():
        if not key or len(key) > MAX_NAME:
            raise _fail(where, f"{name}.{key[:60]}", f"metric names must have 1 to {MAX_NAME} characters")
        values[key] = number_or_none(value, where, f"{name}.{key}")
    return values


def plain_json(value: Any, where: str, name: str, depth: int = 0) -> Any:
    """``value`` as the server stores free-form JSON: non-finite floats null, text storable, nesting bounded."""
    if depth > MAX_JSON_DEPTH:
        raise _fail(where, name, f"nests more than {MAX_JSON_DEPTH} levels deep: flatten it")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(k): plain_json(v, where, name, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_json(v, where, name, depth + 1) for v in value]
    return value


def _object(obj: Mapping[str, Any], name: str, where: str) -> dict[str, Any]:
    value = obj.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(where, name, f"must be an object, got {type(value).__name__}")
    return dict(plain_json(value, where, name))


# --- one line of each type -------------------------------------------------------------------------

RUN_FIELDS = ("type", "version", "name", "experiment", "config", "source", "source_info", "max_steps")
METRICS_FIELDS = ("type", "step", "metrics")
CHECKPOINT_FIELDS = ("type", "step", "uri")
FINISH_FIELDS = ("type", "status", "final_metrics", "error_message")
ROLLOUT_LINE_FIELDS = ("type", "step", *ROLLOUT_FIELDS)


def run_header(obj: Mapping[str, Any], where: str, default_name: str) -> RunHeader:
    _only(obj, RUN_FIELDS, where, "run line")
    version = obj.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _fail(where, "version", f"is required: the format version, {FORMAT_VERSION}")
    if version > FORMAT_VERSION or version < 1:
        raise _fail(
            where,
            "version",
            f"is {version}, but this client reads version {FORMAT_VERSION} only: "
            "update the rlvr-studio package, or write version 1",
        )
    source = obj.get("source", "import")
    if source not in SOURCES:
        raise _fail(where, "source", f"must be one of {', '.join(SOURCES)}, got {source!r}")
    max_steps = step_of(obj, where, "max_steps") if obj.get("max_steps") is not None else 0
    return RunHeader(
        name=text_of(obj, "name", where, limit=MAX_NAME, default=default_name) or default_name,
        experiment=text_of(obj, "experiment", where, limit=MAX_NAME),
        config=_object(obj, "config", where),
        source=str(source),
        source_info=_object(obj, "source_info", where),
        max_steps=max_steps,
    )


def metrics_item(obj: Mapping[str, Any], where: str) -> Metrics:
    _only(obj, METRICS_FIELDS, where, "metrics line")
    if "metrics" not in obj:
        raise _fail(where, "metrics", "is required: an object of metric name -> number")
    return Metrics(where, step_of(obj, where), metric_values(obj["metrics"], where, "metrics"))


def checkpoint_item(obj: Mapping[str, Any], where: str) -> Checkpoint:
    _only(obj, CHECKPOINT_FIELDS, where, "checkpoint line")
    uri = text_of(obj, "uri", where, limit=MAX_URI, required=True) or ""
    if not uri:
        raise _fail(where, "uri", "must not be empty: the checkpoint's folder or object-store URI")
    return Checkpoint(where, step_of(obj, where), uri)


def finish_item(obj: Mapping[str, Any], where: str) -> Finish:
    _only(obj, FINISH_FIELDS, where, "finish line")
    status = obj.get("status")
    if status not in FINISH_STATUSES:
        raise _fail(where, "status", f"must be one of {', '.join(FINISH_STATUSES)}, got {status!r}")
    final = metric_values(obj.get("final_metrics") or {}, where, "final_metrics")
    message = text_of(obj, "error_message", where, limit=MAX_ERROR_MESSAGE, default="") or ""
    return Finish(where, str(status), final, message)


def prompt_id_for(prompt: str) -> str:
    """The default ``prompt_id``: a digest of the prompt text, so a prompt keeps its id across steps."""
    return "p-" + hashlib.sha1(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def rollout_item(
    obj: Mapping[str, Any], where: str, limits: Limits, allowed: tuple[str, ...] = ROLLOUT_LINE_FIELDS
) -> Rollout:
    """A rollout line (or a JsonlSink ``rollouts.jsonl`` row): every field checked by type and bound, then
    shaped by the client's own ``rollout_payload`` (the same code ``IngestRun.log_rollouts`` runs)."""
    _only(obj, allowed, where, "rollout line")
    step = step_of(obj, where)
    for name in ("group", "sample_index"):
        value = obj.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1_000_000:
            raise _fail(
                where, name, "is required: an integer from 0 to 1,000,000 (the rollout's slot in its step)"
            )
    prompt = text_of(obj, "prompt", where, limit=MAX_TEXT, default="") or ""
    out: dict[str, Any] = {
        "group": obj["group"],
        "sample_index": obj["sample_index"],
        "prompt": prompt,
        "completion": text_of(obj, "completion", where, limit=MAX_TEXT, required=True),
        "prompt_id": text_of(obj, "prompt_id", where, limit=MAX_PROMPT_ID) or prompt_id_for(prompt),
        "finish_reason": text_of(obj, "finish_reason", where, limit=MAX_FINISH_REASON, default="unknown"),
        "answer": text_of(obj, "answer", where, limit=MAX_TEXT),
        "reward": number_or_none(obj.get("reward"), where, "reward"),
        "advantage": number_or_none(obj.get("advantage"), where, "advantage"),
    }
    correct = obj.get("correct")
    if correct is not None and not isinstance(correct, bool):
        raise _fail(where, "correct", f"must be true, false or null (unknown), got {correct!r}")
    out["correct"] = correct
    out["rewards"] = _named_numbers(obj.get("rewards"), where, "rewards")
    out["details"] = _details(obj.get("details"), where)
    out.update(_token_arrays(obj, where, limits))
    return Rollout(where, step, rollout_payload(step, out, where))


def _named_numbers(value: Any, where: str, name: str) -> dict[str, float | None]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(where, name, f"must be an object of reward name -> number, got {type(value).__name__}")
    if len(value) > MAX_REWARD_KEYS:
        raise _fail(where, name, f"has {len(value)} entries; at most {MAX_REWARD_KEYS}")
    for key in value:
        if not key or len(key) > MAX_NAME:
            raise _fail(where, f"{name}.{key[:60]}", f"names must have 1 to {MAX_NAME} characters")
    return {key: number_or_none(v, where, f"{name}.{key}") for key, v in value.items()}


def _details(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(
            where, "details", f"must be an object of verifier name -> object, got {type(value).__name__}"
        )
    if len(value) > MAX_REWARD_KEYS:
        raise _fail(where, "details", f"has {len(value)} entries; at most {MAX_REWARD_KEYS}")
    for key, record in value.items():
        if not key or len(key) > MAX_NAME:
            raise _fail(where, f"details.{key[:60]}", f"names must have 1 to {MAX_NAME} characters")
        if not isinstance(record, dict):
            raise _fail(where, f"details.{key}", f"must be an object, got {type(record).__name__}")
    return dict(plain_json(value, where, "details"))


def _token_arrays(obj: Mapping[str, Any], where: str, limits: Limits) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ids, tokens = obj.get("token_ids"), obj.get("tokens")
    for name, value in (("token_ids", ids), ("tokens", tokens)):
        if value is None:
            continue
        if not isinstance(value, list):
            raise _fail(where, name, f"must be a list, got {type(value).__name__}")
        if len(value) > limits.tokens:
            raise _fail(where, name, f"has {len(value):,} tokens; at most {limits.tokens:,} per rollout")
        out[name] = value
    if ids is not None and any(
        isinstance(t, bool) or not isinstance(t, int) or not -(2**31) <= t < 2**31 for t in ids
    ):
        bad = next(
            i
            for i, t in enumerate(ids)
            if isinstance(t, bool) or not isinstance(t, int) or not -(2**31) <= t < 2**31
        )
        raise _fail(where, f"token_ids[{bad}]", f"must be a 32-bit integer, got {ids[bad]!r}")
    if tokens is not None:
        for i, token in enumerate(tokens):
            if not isinstance(token, str) or len(token) > MAX_TOKEN_TEXT:
                raise _fail(where, f"tokens[{i}]", f"must be a string of at most {MAX_TOKEN_TEXT} characters")
    if ids is not None and tokens is not None and len(ids) != len(tokens):
        raise _fail(
            where, "tokens", f"has {len(tokens)} entries but token_ids {len(ids)}: give one per token"
        )
    length = len(tokens) if tokens is not None else len(ids or [])
    channels = obj.get("token_values")
    if channels is None:
        return out
    if not isinstance(channels, dict):
        raise _fail(
            where, "token_values", f"must be an object of channel -> list, got {type(channels).__name__}"
        )
    checked: dict[str, list[float | None]] = {}
    for channel, values in channels.items():
        name = f"token_values.{channel}"
        if channel not in TOKEN_CHANNELS:
            raise _fail(where, name, f"unknown channel; the channels are {', '.join(TOKEN_CHANNELS)}")
        if not isinstance(values, list) or len(values) != length:
            got = f"{len(values)} values" if isinstance(values, list) else type(values).__name__
            raise _fail(
                where, name, f"must be a list of one number (or null) per token: {got} for {length} tokens"
            )
        checked[channel] = [number_or_none(v, where, f"{name}[{i}]") for i, v in enumerate(values)]
    out["token_values"] = checked
    return out


# --- the readers -----------------------------------------------------------------------------------


def read_ingest_file(path: Path) -> Reader:
    """An RLVR ingest file (docs/ingest_format.md)."""

    def read(reading: Reading) -> Iterator[RunHeader | Item]:
        header_at: str | None = None
        for where, obj in reading.json_lines(
            path, name="ingest-file"
        ):  # the content names the run, not the file name
            kind = obj.get("type")
            if header_at is None:
                if kind != "run":
                    raise _fail(
                        where,
                        "type",
                        f'the first line must be the run line ({{"type": "run", "version": '
                        f"{FORMAT_VERSION}, ...}}), got {kind!r}",
                    )
                header_at = where
                yield run_header(obj, where, default_name=path.stem)
            elif kind == "run":
                raise _fail(
                    where, "type", f"a second run line (the run line is {header_at}): one run per file"
                )
            elif kind == "metrics":
                yield metrics_item(obj, where)
            elif kind == "rollout":
                yield rollout_item(obj, where, reading.limits)
            elif kind == "checkpoint":
                yield checkpoint_item(obj, where)
            elif kind == "finish":
                yield finish_item(obj, where)
            else:
                raise _fail(where, "type", f"must be one of {', '.join(LINE_TYPES)}, got {kind!r}")
        if header_at is None:
            raise ImportFileError(str(path), "", "the file has no lines: it needs at least the run line")

    return read


def read_trainer_dir(path: Path) -> Reader:
    """A run directory written by ``rlvr train`` (trainer/sinks.py JsonlSink). It holds no config (give
    ``--config``); the outcome comes from events.jsonl's ``end`` / ``error`` event."""

    def read(reading: Reading) -> Iterator[RunHeader | Item]:
        yield RunHeader(name=path.resolve().name, source_info={"format": "rlvr-train-dir"})
        if (path / "metrics.jsonl").is_file():
            for where, obj in reading.json_lines(path / "metrics.jsonl"):
                values = {k: v for k, v in obj.items() if k != "step"}
                yield Metrics(where, step_of(obj, where), metric_values(values, where, "(metrics)"))
        if (path / "rollouts.jsonl").is_file():
            for where, obj in reading.json_lines(path / "rollouts.jsonl"):
                yield rollout_item(obj, where, reading.limits, allowed=("step", *ROLLOUT_FIELDS))
        if (path / "events.jsonl").is_file():
            yield from _trainer_events(path / "events.jsonl", reading)

    return read


def _trainer_events(path: Path, reading: Reading) -> Iterator[Item]:
    outcome: Finish | None = None
    for where, obj in reading.json_lines(path):
        event = obj.get("event")
        if event == "checkpoint":
            uri = text_of(obj, "path", where, limit=MAX_URI, required=True) or ""
            yield Checkpoint(where, step_of(obj, where), uri)
        elif event == "end":
            status = obj.get("status")
            if status not in FINISH_STATUSES:
                raise _fail(where, "status", f"must be one of {', '.join(FINISH_STATUSES)}, got {status!r}")
            if outcome is None or outcome.status != "failed":  # an error event's message is kept
                outcome = Finish(where, str(status))
        elif event == "error":
            message = text_of(obj, "message", where, limit=MAX_ERROR_MESSAGE * 100, default="") or ""
            outcome = Finish(where, "failed", error_message=message[:MAX_ERROR_MESSAGE])
    if outcome is not None:
        yield outcome


# --- one pass over everything ----------------------------------------------------------------------


@dataclass
class ImportPlan:
    """What ``scan`` found: the run, what will be sent, and the content digest."""

    format: str
    header: RunHeader
    digest: str
    lines: int = 0
    metric_lines: int = 0
    metric_points: int = 0
    rollouts: int = 0
    tokens: int = 0
    checkpoints: int = 0
    first_step: int | None = None
    last_step: int | None = None
    finish: Finish | None = None

    @property
    def items(self) -> int:
        return self.metric_lines + self.rollouts + self.checkpoints

    @property
    def max_steps(self) -> int:
        return self.header.max_steps or (self.last_step or 0)

    def key(self, project: str) -> str:
        """The run's idempotency key: the same files imported into the same project name the same run."""
        seed = f"{self.format}\0{project}\0{self.digest}".encode()
        return "import-" + hashlib.sha256(seed).hexdigest()[:40]

    def summary(self) -> str:
        steps = "no steps" if self.first_step is None else f"steps {self.first_step}..{self.last_step}"
        return (
            f"{steps}: {self.metric_lines:,} metric lines ({self.metric_points:,} values), {self.rollouts:,} "
            f"rollouts ({self.tokens:,} tokens), {self.checkpoints:,} checkpoints"
        )


def scan(
    format_name: str,
    reader: Reader,
    limits: Limits | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> ImportPlan:
    """Read everything once and check it (ImportFileError at the first problem); nothing is sent."""
    reading = Reading(limits=limits or Limits(), on_bytes=on_bytes)
    stream = reader(reading)
    header = next(stream, None)
    if not isinstance(header, RunHeader):
        raise IngestError(f"{format_name}: the reader found no run")  # readers always yield the header first
    plan = ImportPlan(format=format_name, header=header, digest="")
    slots: dict[tuple[int, int, int], str] = {}
    for item in stream:
        if isinstance(item, RunHeader):
            raise IngestError(f"{format_name}: a second run")
        if plan.finish is not None:
            raise ImportFileError(
                item.where, "type", f"comes after the finish line ({plan.finish.where}): finish is last"
            )
        if isinstance(item, Finish):
            plan.finish = item
            continue
        plan.first_step = item.step if plan.first_step is None else min(plan.first_step, item.step)
        plan.last_step = item.step if plan.last_step is None else max(plan.last_step, item.step)
        if isinstance(item, Metrics):
            plan.metric_lines += 1
            plan.metric_points += len(item.values)
        elif isinstance(item, Rollout):
            slot = (item.step, int(item.fields["group"]), int(item.fields["sample_index"]))
            if slot in slots:
                raise ImportFileError(
                    item.where,
                    "sample_index",
                    (
                        f"step {slot[0]} group {slot[1]} sample_index {slot[2]} is already taken by {slots[slot]}: "
                        "give each completion of a step its own (group, sample_index)"
                    ),
                )
            slots[slot] = item.where
            plan.rollouts += 1
            plan.tokens += item.tokens
        else:
            plan.checkpoints += 1
    plan.lines, plan.digest = reading.lines, reading.digest()
    return plan


def items(
    reader: Reader, limits: Limits | None = None, on_bytes: Callable[[int], None] | None = None
) -> Iterator[Item]:
    """The items again (the second pass, to send them), without the header."""
    for item in reader(Reading(limits=limits or Limits(), on_bytes=on_bytes)):
        if not isinstance(item, RunHeader):
            yield item


STEP_FILE = re.compile(r"^(\d+)\.jsonl$")


def detect_format(path: Path) -> str:
    """``rlvr`` for a file; for a directory ``trainer`` (JsonlSink's files) or ``verl`` (``<step>.jsonl`` files)."""
    if path.is_file():
        return "rlvr"
    if not path.is_dir():
        raise IngestError(f"{path} does not exist")
    if any((path / name).is_file() for name in TRAINER_FILES[:2]):
        return "trainer"
    if any(STEP_FILE.match(p.name) for p in path.iterdir()):
        return "verl"
    raise IngestError(
        f"{path} is neither a run directory of `rlvr train` (metrics.jsonl, rollouts.jsonl) nor verl's rollout dump "
        "(<step>.jsonl files, trainer.rollout_data_dir): give one of those, or an RLVR ingest file (.jsonl)"
    )
