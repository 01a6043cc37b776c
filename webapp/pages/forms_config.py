"""The experiment form, generated from the trainer config's JSON schema (``trainer.config.config_schema``).

Sections are the schema's top-level object properties (model, data, rollout, ...); top-level scalars
(name, seed) go to a "General" section and lists or free-form objects (verifiers, task_config) become
JSON text areas. A method choice (a property with ``x-choices``, trainer/config/choice.py) becomes a select of
the registered methods, each with its one-line description, and a JSON text area of the chosen method's
params; choosing another method fills in that method's default params. A list of method choices
(``reward_shaping``, ``loss_masks``...) is one JSON text area whose help lists the methods it may hold. The page's script (static/js/experiment_form.js) reads the inputs back by their
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
    choice_help: tuple[tuple[str, str], ...] = ()  # (method name, one-line description) of a method choice
    option_params: tuple[str, ...] = ()  # each choice's default params as JSON (filled in when it is chosen)
    option_params_help: tuple[str, ...] = ()  # each choice's params described (shown under the params area)
    params_for: str = ""  # the input id of the params area a method select fills in
    hidden: bool = False  # a params area of a method without parameters (shown when one with parameters is chosen)

    @property
    def options(self) -> list[tuple[str, str, str, str]]:
        """(value, description, default params JSON, params help) per choice of a select."""
        help_by_name = dict(self.choice_help)
        params = self.option_params or ("",) * len(self.choices)
        params_help = self.option_params_help or ("",) * len(self.choices)
        return [(c, help_by_name.get(c, ""), p, h) for c, p, h in zip(self.choices, params, params_help, strict=True)]

    @property
    def rows(self) -> int:
        """Text-area height: the value's lines, at least 3, at most 12."""
        return max(3, min(12, self.text.count("\n") + 1))

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
                field
                for key, sub in ref["properties"].items()
                for field in _fields(schema, f"{name}.{key}", sub, section_values.get(key))
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


def _fields(schema: Schema, path: str, prop: Schema, value: Any) -> list[ConfigField]:
    """One field, or a method choice's select and params area."""
    choices = prop.get("x-choices")
    if not choices:
        return [_field(schema, path, prop, value)]
    listing = tuple((c["name"], c["description"]) for c in choices)
    params_help = "; ".join(f"{c['name']}: {_params_summary(c['params'])}" for c in choices if c["params"].get("properties"))
    if prop.get("type") == "array" or "items" in prop:
        help_text = f"{prop.get('description', '')} A list of {{\"name\": ..., \"params\": {{...}}}}; methods: " + "; ".join(
            f"{n}: {d.rstrip('.')}" for n, d in listing) + (f". Parameters: {params_help}." if params_help else ".")
        return [ConfigField(path=path, label=_title(path.rsplit(".", 1)[-1]), kind="json", help=help_text,
                            value=value if value is not None else [], choice_help=listing)]
    chosen = value if isinstance(value, dict) else {"name": value, "params": {}}
    label = prop.get("title") or _title(path.rsplit(".", 1)[-1])
    params_id = "cfg-" + path.replace(".", "-") + "-params"
    select = ConfigField(
        path=f"{path}.name", label=label, kind="select", help=prop.get("description", ""), value=chosen.get("name"),
        choices=tuple(n for n, _ in listing), choice_help=listing, params_for=params_id,
        option_params=tuple(json.dumps(_defaults(c["params"]), indent=2) for c in choices),
        option_params_help=tuple(_params_help(c["params"]) for c in choices),
    )
    chosen_schema: Schema = next((c["params"] for c in choices if c["name"] == chosen.get("name")), {})
    params = ConfigField(
        path=f"{path}.params", label=f"{label}: parameters", kind="json",
        help=_params_help(chosen_schema),
        value=chosen.get("params") or {},
        hidden=not chosen_schema.get("properties"),
    )
    return [select, params]


def _defaults(params_schema: Schema) -> dict[str, Any]:
    return {k: v.get("default") for k, v in params_schema.get("properties", {}).items()}


def _params_summary(params_schema: Schema) -> str:
    return ", ".join(
        f"{k} ({v.get('description', '').rstrip('.')}; default {json.dumps(v.get('default'))})"
        for k, v in params_schema.get("properties", {}).items()
    )


def _params_help(params_schema: Schema) -> str:
    """What the params area says for one method: each parameter with its help and default."""
    if not params_schema.get("properties"):
        return "This method has no parameters."
    return "Parameters: " + _params_summary(params_schema) + "."


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
