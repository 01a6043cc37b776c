"""Bounded input: the base model every config section derives from, and a strict JSON reader.

Every value a user sets reaches a database column, a tensor size or a loop count, so each one has a
bound: numbers are finite and lie in a documented range (each field's ``ge``/``le``), strings and lists
have a maximum length, and free-form JSON (verifier params, task configs) may not hold NUL characters,
lone UTF-16 surrogates, non-finite numbers or nesting deeper than ``MAX_DEPTH``. PostgreSQL refuses NUL
and lone surrogates in text and jsonb, so without this check such a value is a server error on save.

``strict_json_loads`` is the reader the web API parses bodies with: it measures bracket depth in one
linear pass before ``json.loads`` (which recurses, and raises RecursionError on a 100,000-deep array),
refuses the ``NaN`` / ``Infinity`` literals Python's json accepts, and then walks the result for the
characters above. Importable without torch or Django.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, model_validator

MAX_DEPTH = 64  # nesting of JSON arrays/objects (and config dicts) a body may have
MAX_STRING_CHARS = 65_536  # any config string (prompt templates, system prompts, patterns)
MAX_NAME_CHARS = 200  # names, labels, paths of a config
MAX_LIST_ITEMS = 1024  # any config list (verifiers, weights, benchmarks, criteria)
MAX_NODES = 2_000_000  # values (strings, numbers, containers) in one body or config
MAX_SEED = 2**32 - 1  # numpy's legacy seeding takes 32 bits; torch.manual_seed and bigint hold it too

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


def check_plain_value(value: Any, path: str = "", max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
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
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                raise UnsafeInput(f"is nested more than {max_depth} levels deep: flatten it", where)
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                key_text = str(key)
                if isinstance(key, str) and string_problem(key):
                    raise UnsafeInput(f"key {key_text[:40]!r} {string_problem(key)}", where)
                stack.append((child, f"{where}.{key_text}" if where else key_text, depth + 1))


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


def strict_json_loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that refuses deep nesting, NaN/Infinity, NUL and lone surrogates (UnsafeInput), and
    raises ``json.JSONDecodeError`` / ``UnicodeDecodeError`` for text that is not JSON."""
    problem = json_depth_problem(text, max_depth)
    if problem:
        raise UnsafeInput(problem)
    value = json.loads(text, parse_constant=_refuse_constant)
    check_plain_value(value, max_depth=max_depth)
    return value


class _BoundedYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases (``*name`` repeats a node: a few lines can expand to billions of
    values, the 'billion laughs') and with nesting capped at MAX_DEPTH."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not accepted: write the value out", mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, f"YAML nests more than {MAX_DEPTH} levels deep", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def safe_yaml_load(text: str) -> Any:
    """``yaml.safe_load`` refusing aliases and deep nesting (a ``yaml.YAMLError`` naming the line)."""
    loader = _BoundedYamlLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


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
