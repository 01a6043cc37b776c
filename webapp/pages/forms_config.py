"""The experiment form, generated from the trainer config's JSON schema (``trainer.config.config_schema``).

Sections are the schema's top-level object properties (model, data, rollout, ...); top-level scalars
(name, seed) go to a "General" section and lists or free-form objects (verifiers, task_config) become
JSON text areas. The page's script (static/js/experiment_form.js) reads the inputs back by their
``data-path`` and posts the config to the REST API, which validates it with the same pydantic model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trainer.config import ExperimentConfig, config_schema

Schema = dict[str, Any]


@dataclass(frozen=True)
class ConfigField:
    path: str  # dotted, relative to the config: "training.learning_rate"
    label: str
    kind: str  # "select" | "checkbox" | "integer" | "number" | "text" | "json"
    help: str
    value: Any
    nullable: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def error_key(self) -> str:
        """The key the API's ``extra.fields`` uses for this field."""
        return f"config.{self.path}"

    @property
    def input_id(self) -> str:
        return "cfg-" + self.path.replace(".", "-")

    @property
    def text(self) -> str:
        """The value as an input's text: '' for null, JSON for lists and objects."""
        if self.kind == "json":
            return json.dumps(self.value, indent=2)
        if self.value is None:
            return ""
        return str(self.value)


@dataclass(frozen=True)
class ConfigSection:
    key: str
    title: str
    help: str
    fields: tuple[ConfigField, ...]


def default_config() -> dict[str, Any]:
    return ExperimentConfig().model_dump(mode="json")


def config_sections(*, config: dict[str, Any] | None = None) -> list[ConfigSection]:
    """The form's sections, prefilled with ``config`` (an experiment's saved config) or the defaults."""
    schema = config_schema()
    values = config or default_config()
    general: list[ConfigField] = []
    sections: list[ConfigSection] = []
    for name, prop in schema["properties"].items():
        ref = _resolve(schema, prop)
        if ref.get("type") == "object" and "properties" in ref:
            section_values = values.get(name) or {}
            fields = tuple(
                _field(schema, f"{name}.{key}", sub, section_values.get(key))
                for key, sub in ref["properties"].items()
            )
            sections.append(
                ConfigSection(key=name, title=_title(name), help=ref.get("description", ""), fields=fields)
            )
        elif _kind(schema, prop)[0] == "json":
            field = _field(schema, name, prop, values.get(name))
            sections.append(
                ConfigSection(key=name, title=_title(name), help=prop.get("description", ""), fields=(field,))
            )
        else:
            general.append(_field(schema, name, prop, values.get(name)))
    if general:
        sections.insert(0, ConfigSection(key="general", title="General", help="", fields=tuple(general)))
    return sections


def _field(schema: Schema, path: str, prop: Schema, value: Any) -> ConfigField:
    kind, nullable, body = _kind(schema, prop)
    return ConfigField(
        path=path,
        label=prop.get("title") or _title(path.rsplit(".", 1)[-1]),
        kind=kind,
        help=prop.get("description", ""),
        value=value,
        nullable=nullable,
        choices=tuple(str(c) for c in body.get("enum", ())),
        minimum=body.get("minimum", body.get("exclusiveMinimum")),
        maximum=body.get("maximum", body.get("exclusiveMaximum")),
    )


def _kind(schema: Schema, prop: Schema) -> tuple[str, bool, Schema]:
    """(input kind, whether null is allowed, the non-null branch of the schema)."""
    options = prop.get("anyOf")
    nullable = False
    body = prop
    if options:
        non_null = [_resolve(schema, o) for o in options if o.get("type") != "null"]
        nullable = len(non_null) < len(options)
        body = non_null[0] if len(non_null) == 1 else {"type": "json"}
    else:
        body = _resolve(schema, prop)
    if "enum" in body:
        return "select", nullable, body
    kinds = {"boolean": "checkbox", "integer": "integer", "number": "number", "string": "text"}
    return kinds.get(str(body.get("type")), "json"), nullable, body


def _resolve(schema: Schema, prop: Schema) -> Schema:
    ref = prop.get("$ref")
    if not ref:
        return prop
    resolved: Schema = schema["$defs"][ref.rsplit("/", 1)[-1]]
    return resolved


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()
