"""Experiment configs as text: a pasted YAML or JSON config read into a mapping, and a config written as YAML.

The experiment form's YAML view sends its text here rather than parsing it in the browser: the server's
reader is the bounded one the rest of the API uses. ``parse_config_text`` refuses text over
``MAX_CONFIG_TEXT_BYTES``, YAML anchors and aliases (``&name`` / ``*name``: a few lines can expand to
billions of values), nesting deeper than ``trainer.bounds.MAX_DEPTH``, NUL and lone surrogates, and a top
level that is not a mapping; each refusal is an ``InvalidInput`` on ``text`` whose ``extra`` also carries
the ``line`` (1-based) where it was found. Nothing is validated as a config here: the form applies the
mapping to its fields and the experiments API validates it on save.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from trainer.bounds import UnsafeInput, check_plain_value, safe_yaml_load, strict_json_loads
from webapp.core.errors import InvalidInput

MAX_CONFIG_TEXT_BYTES = 256 * 1024


class ConfigTextError(InvalidInput):
    """Text that is not a config mapping; ``line`` is where the reader stopped (None when not known)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        where = f"line {line}: " if line is not None else ""
        super().__init__(where + message, {"text": [where + message]})
        self.extra["line"] = line
        self.line = line


def parse_config_text(text: str) -> dict[str, Any]:
    """The mapping a YAML (or JSON) config text holds, or ConfigTextError saying what and where."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_CONFIG_TEXT_BYTES:
        raise ConfigTextError(
            f"the text is {size / 1024:.0f} KB; a config may be at most {MAX_CONFIG_TEXT_BYTES // 1024} KB"
        )
    data = _json(text) if text.lstrip().startswith("{") else _yaml(text)
    if not isinstance(data, dict):
        shown = "nothing" if data is None else f"a {type(data).__name__}"
        raise ConfigTextError(
            f"a config is a mapping of sections (model:, data:, training: ...), this text holds {shown}"
        )
    try:
        check_plain_value(data)
    except UnsafeInput as err:
        raise ConfigTextError(f"{err.path}: {err.problem}" if err.path else err.problem) from None
    return data


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (prompt templates) as ``|`` blocks, which read as they will be used."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None  # PyYAML falls back to quotes where a block cannot hold it
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _string)


def config_yaml(config: dict[str, Any]) -> str:
    """``config`` as block-style YAML in its own key order (the schema's, for a config the form built)."""
    return yaml.dump(
        config, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )


def _json(text: str) -> Any:
    try:
        return strict_json_loads(text)
    except json.JSONDecodeError as err:
        raise ConfigTextError(f"not valid JSON: {err.msg} (column {err.colno})", err.lineno) from None
    except UnsafeInput as err:
        raise ConfigTextError(err.problem) from None


def _yaml(text: str) -> Any:
    try:
        return safe_yaml_load(text)  # anchors, aliases and deep nesting refused in one bounded pass first
    except UnsafeInput as err:
        raise ConfigTextError(f"{err.path}: {err.problem}" if err.path else err.problem) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "not valid YAML"
        raise ConfigTextError(f"not valid YAML: {problem}", mark.line + 1 if mark else None) from None
    except yaml.reader.ReaderError as err:  # a character YAML does not allow: where it is, by offset
        line = text.count("\n", 0, err.position) + 1
        raise ConfigTextError(
            f"not valid YAML: {err.reason} (character #x{err.character:04x})", line
        ) from None
    except yaml.YAMLError as err:
        raise ConfigTextError(f"not valid YAML: {err}") from None
