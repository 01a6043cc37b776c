"""Bounded input: the base model every config section derives from, and a strict JSON reader.

Every value a user sets reaches a database column, a tensor size or a loop count, so each one has a
bound: numbers are finite and lie in a documented range (each field's ``ge``/``le``), strings and lists
have a maximum length, and free-form JSON (verifier params, task configs) may not hold NUL characters,
lone UTF-16 surrogates, non-finite numbers or nesting deeper than ``MAX_DEPTH``. PostgreSQL refuses NUL
and lone surrogates in text and jsonb, so without this check such a value is a server error on save.

``strict_json_loads`` and ``safe_yaml_load`` are the readers every body and config text is parsed with
(webapp/api/parsers.py, webapp/experiments/config_text.py, trainer/config/loading.py). Each refuses, in
time linear in the text and before building deep objects: nesting past ``MAX_DEPTH`` (JSON: one pass over
the brackets before ``json.loads``, which recurses; YAML: PyYAML's event stream with a depth counter, stopped
at the first level too deep, since a full parse of nested flow collections is quadratic), the ``NaN`` /
``Infinity`` literals Python's json accepts, floats that overflow, and integers of more than
``MAX_INT_DIGITS`` digits (Python refuses to convert those past 4,300 digits with a bare ValueError, and a
number that large fits no field). Then they walk the result for the characters above. Every refusal is an
``UnsafeInput`` (a ValueError) or, for YAML, a ``yaml.MarkedYAMLError`` naming the line. No global int
limit is changed. Importable without torch or Django.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, model_validator

MAX_DEPTH = 64  # nesting of JSON arrays/objects (and config dicts) a body may have
MAX_STRING_CHARS = 65_536  # any config string (prompt templates, system prompts, patterns)
MAX_NAME_CHARS = 200  # names, labels, paths of a config
MAX_LIST_ITEMS = 1024  # any config list (verifiers, weights, benchmarks, criteria)
MAX_NODES = 2_000_000  # values (strings, numbers, containers) in one body or config
MAX_SEED = 2**32 - 1  # numpy's legacy seeding takes 32 bits; torch.manual_seed and bigint hold it too
# Integer literals: 300 digits keeps every integer convertible to a finite float (the largest is ~1.8e308), so a
# number field given an integer never overflows; config integers are far smaller (MAX_SEED has 10 digits).
MAX_INT_DIGITS = 300
_MAX_INT = 10**MAX_INT_DIGITS

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class UnsafeInput(ValueError):
    """A value no config or API body may hold; ``path`` is the dotted place where it sits ('' at the top)."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.problem = problem
        self.path = path


def string_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (NUL, a lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored: remove it"
    if _LONE_SURROGATE.search(text):
        return "contains a lone UTF-16 surrogate (\\ud800-\\udfff), which is not valid Unicode: remove it"
    return None


def check_plain_value(
    value: Any, path: str = "", max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> None:
    """Raise UnsafeInput for a NUL / lone surrogate in any string or key, a non-finite float, nesting
    deeper than ``max_depth`` or more than ``max_nodes`` values, naming the dotted path. Iterative, so
    depth never exhausts the stack; the node cap bounds the walk even over shared sub-objects."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    seen = 0
    while stack:
        item, where, depth = stack.pop()
        seen += 1
        if seen > max_nodes:
            raise UnsafeInput(f"holds more than {max_nodes:,} values: send less data", path)
        if isinstance(item, str):
            problem = string_problem(item)
            if problem:
                raise UnsafeInput(problem, where)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise UnsafeInput(f"is {item}, but numbers must be finite", where)
        elif isinstance(item, int) and not -_MAX_INT < item < _MAX_INT:
            raise UnsafeInput(_too_many_digits(), where)
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                raise UnsafeInput(f"is nested more than {max_depth} levels deep: flatten it", where)
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                key_text = str(key)
                if isinstance(key, str) and string_problem(key):
                    raise UnsafeInput(f"key {key_text[:40]!r} {string_problem(key)}", where)
                stack.append((child, f"{where}.{key_text}" if where else key_text, depth + 1))


def base_url_problem(url: str, schemes: Collection[str], credentials_fix: str = "") -> str | None:
    """Why ``url`` cannot be the base URL of a service the worker calls (a judge, an environment server), or None:
    a valid URL with one of ``schemes`` (in order, as the message names them), a host, no user:password@ (the
    message adds ``credentials_fix``), no query or fragment."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a bad port
    except ValueError as err:
        return f"is not a valid URL ({err})"
    if parts.scheme not in schemes:
        names = [f"{scheme}://" for scheme in schemes]
        return "must start with " + (", ".join(names[:-1]) + " or " if len(names) > 1 else "") + names[-1]
    if not parts.hostname:
        return "has no host name"
    if parts.username is not None or parts.password is not None:
        return "must not hold credentials (user:password@)" + (
            f": {credentials_fix}" if credentials_fix else ""
        )
    if parts.query or parts.fragment:
        return "must not have a query (?...) or fragment (#...)"
    return None


def json_depth_problem(text: str | bytes, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``text`` nests too deep, found in one pass over the raw text (strings skipped), or None."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = 0
    for match in _JSON_TOKENS.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return f"JSON nests more than {max_depth} levels deep (at byte {match.start()}): flatten it"
        elif token in (b"]", b"}"):
            depth -= 1
    return None


_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)  # a string (skipped) or a bracket


def _refuse_constant(name: str) -> Any:
    raise UnsafeInput(f"JSON holds {name}, but numbers must be finite (NaN and Infinity are not JSON)")


def _too_many_digits() -> str:
    return f"is an integer of more than {MAX_INT_DIGITS} digits, larger than any field accepts: send a smaller number"


def _bounded_int(literal: str) -> int:
    if (
        len(literal.lstrip("-")) > MAX_INT_DIGITS
    ):  # before int(): past 4,300 digits it raises a bare ValueError
        raise UnsafeInput(f"JSON holds a number that {_too_many_digits()}")
    return int(literal)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise UnsafeInput(
            f"JSON holds the number {literal[:40]}, which overflows a float: numbers must be finite"
        )
    return value


def strict_json_loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that refuses deep nesting, NaN/Infinity, floats that overflow, integers of more than
    ``MAX_INT_DIGITS`` digits, NUL and lone surrogates (UnsafeInput), and raises ``json.JSONDecodeError`` /
    ``UnicodeDecodeError`` for text that is not JSON."""
    problem = json_depth_problem(text, max_depth)
    if problem:
        raise UnsafeInput(problem)
    value = json.loads(
        text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite_float
    )
    check_plain_value(value, max_depth=max_depth)
    return value


# libyaml's parser where PyYAML was built with it (the wheels are): the same events, in C.
_YamlParser: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_COLLECTION_START = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_COLLECTION_END = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _yaml_refusal(problem: str, mark: Any) -> yaml.MarkedYAMLError:
    return yaml.composer.ComposerError(None, None, problem, mark)


def check_yaml_events(text: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Refuse (a ``yaml.MarkedYAMLError`` with the line) anchors and aliases, nesting deeper than ``max_depth``
    and more than ``max_nodes`` values, reading YAML's event stream and stopping at the first one.

    Events are linear in the text and hold no objects. The stop matters: PyYAML's scanner keeps each open
    flow collection as a possible key, so reading all of ``[[[[...`` is quadratic (37 s for 40 KB)."""
    yaml.reader.Reader(
        text
    )  # PyYAML's check for characters YAML does not allow, naming where (libyaml's differs)
    try:
        _check_events(yaml.parse(text, Loader=_YamlParser), max_depth, max_nodes)
    except yaml.scanner.ScannerError as err:
        if "nesting depth" not in str(err.problem):
            raise
        # libyaml stops at its own limit (1,000 levels) while looking ahead, before the events reach ours.
        raise _yaml_refusal(
            f"YAML nests more than {max_depth} levels deep: flatten it", err.problem_mark
        ) from None


def _check_events(events: Any, max_depth: int, max_nodes: int) -> None:
    depth = nodes = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _yaml_refusal(
                "YAML anchors and aliases (&name, *name) are not accepted: write each value out",
                event.start_mark,
            )
        if isinstance(event, _COLLECTION_START):
            depth += 1
            if depth > max_depth:
                raise _yaml_refusal(
                    f"YAML nests more than {max_depth} levels deep: flatten it", event.start_mark
                )
        elif isinstance(event, _COLLECTION_END):
            depth -= 1
        if isinstance(event, (*_COLLECTION_START, yaml.ScalarEvent)):
            nodes += 1
            if nodes > max_nodes:
                raise _yaml_refusal(
                    f"YAML holds more than {max_nodes:,} values: send less data", event.start_mark
                )


class _BoundedYamlLoader(_YamlParser):  # type: ignore[misc, valid-type]
    """The safe loader whose integers are bounded: YAML ints may be hexadecimal or base 60 (``1:30``), so
    both the literal's length and the value's size are checked."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        literal = str(node.value)
        if len(literal.lstrip("+-")) > MAX_INT_DIGITS + 2:  # room for a 0x / 0b / 0o prefix
            raise _yaml_refusal(f"this number {_too_many_digits()}", node.start_mark)
        value = int(yaml.constructor.SafeConstructor.construct_yaml_int(self, node))
        if not -_MAX_INT < value < _MAX_INT:
            raise _yaml_refusal(f"this number {_too_many_digits()}", node.start_mark)
        return value


_BoundedYamlLoader.add_constructor("tag:yaml.org,2002:int", _BoundedYamlLoader.construct_yaml_int)


def safe_yaml_load(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``yaml.safe_load`` that first refuses anchors, aliases, deep nesting and too many values in one bounded
    pass (``check_yaml_events``), bounds integers (a ``yaml.MarkedYAMLError`` naming the line for each), then
    refuses NUL, lone surrogates and non-finite numbers in the result (UnsafeInput, with the dotted path)."""
    check_yaml_events(text, max_depth)
    loader = _BoundedYamlLoader(text)
    try:
        value = loader.get_single_data()
    finally:
        loader.dispose()
    check_plain_value(value, max_depth=max_depth)
    return value


class BoundedModel(BaseModel):
    """Base of every config section: unknown keys refused, floats finite, strings and raw values bounded.

    Each numeric field still states its own range (``ge``/``le``); tests/trainer/test_config_bounds.py
    walks the JSON schema and fails on any integer or number without both bounds.
    """

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, allow_inf_nan=False, str_max_length=MAX_STRING_CHARS
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_unsafe_values(cls, data: Any) -> Any:
        if isinstance(data, dict):
            try:
                check_plain_value(data)
            except UnsafeInput as err:
                raise ValueError(str(err)) from None
        return data
