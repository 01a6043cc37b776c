"""What the experiment form's structured editors need, from the registries' own params schemas.

A method choice's config value is ``{name, params}``; the editors (static/js/config_editors.js) show it as a
select of the registered names (each with its one-line description) and one input per parameter, built from
the method's params model's JSON schema: numbers, checkboxes, selects and text, and a small JSON box for a
nested or free-form parameter. The same field descriptions serve a verifier entry (``{name, params, label}``,
from the verifier registry), a list of method choices (``reward_shaping``, ``loss_masks``...: ``x-choices`` in
the config schema, trainer/config/choice.py) and the rubric section (criteria whose rule is a choice of the
rubric rule registry). Everything here is JSON for ``json_script``: the page holds no generated markup per
method, and the JS builds the same config JSON the API validates.

Field description (``FieldSpec``): ``key``, ``label``, ``kind`` (number, integer, checkbox, select, text,
textarea, json, object, list, method), ``help``, ``nullable``, ``default``, and per kind ``options``
(``[value, description]``), ``min`` / ``max``, ``fields`` (object), ``item`` (list), ``choices`` (method).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from trainer.config import config_schema
from trainer.rubrics.rules import RULES
from trainer.verifiers import VERIFIERS

Schema = dict[str, Any]
FieldSpec = dict[str, Any]

MULTILINE = {"prompt_template", "privileged_template", "system_prompt"}  # long text: a textarea
NOUNS = {"criteria": "criterion"}  # what the "Add ..." button of a list adds
# Which part of a rubric criterion each scorer uses: the other part is hidden and sent as null.
SHOWN_WHEN = {"rule": {"scorer": "rule"}, "judge": {"scorer": "judge"}}


def param_fields(params_schema: Schema) -> list[FieldSpec]:
    """One field per parameter of a method's (or verifier's, or rule's) params model."""
    defs = params_schema.get("$defs", {})
    return [_field(defs, key, prop) for key, prop in params_schema.get("properties", {}).items()]


def method_choices(choices: list[Schema]) -> list[FieldSpec]:
    """An ``x-choices`` list (name, description, params schema) as the editor's choices."""
    return [_choice(c["name"], c.get("description", ""), c.get("params") or {}) for c in choices]


def verifier_choices() -> list[FieldSpec]:
    """Every registered verifier, with its one-line description and its params model's fields: the config
    schema's ``x-choices`` of a verifier's name (trainer/verifiers/spec.py), as for a method choice."""
    name = config_schema()["$defs"]["VerifierSpec"]["properties"]["name"]
    choices = method_choices(name["x-choices"])
    for choice in choices:
        _factory_defaults(choice, VERIFIERS.get(choice["name"]).Params)
    return choices


def _factory_defaults(choice: FieldSpec, params: type[BaseModel]) -> None:
    """Fill in the defaults the schema leaves out: a parameter whose default is built by a factory (the judge's
    ``parse``, a nested model) has none in the JSON schema, and the editor would send null for it."""
    for spec in choice["fields"]:
        info = params.model_fields.get(spec["key"])
        if spec.get("default") is not None or info is None or info.default_factory is None:
            continue
        made = info.get_default(call_default_factory=True)
        default = made.model_dump(mode="json") if isinstance(made, BaseModel) else made
        spec["default"] = choice["defaults"][spec["key"]] = default


def rule_choices() -> list[FieldSpec]:
    """Every rubric rule type, with its docstring summary and its params model's fields."""
    out = []
    for name in RULES.names():
        cls = RULES.get(name)
        summary = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out.append(_choice(name, " ".join(summary.split()), cls.Params.model_json_schema()))
    return out


def editor_specs() -> dict[str, FieldSpec]:
    """Config path -> the structured editor of that path: the verifiers, every method choice (one or a
    list), and the rubric."""
    schema = config_schema()
    verifier = schema["$defs"]["VerifierSpec"]["properties"]
    specs: dict[str, FieldSpec] = {
        "verifiers": {
            "kind": "list", "key": "verifiers", "label": "Verifiers", "noun": "verifier",
            "help": schema["properties"]["verifiers"].get("description", ""),
            "max": schema["properties"]["verifiers"].get("maxItems"),
            "item": {
                "kind": "method", "name_key": "name", "choices": verifier_choices(), "choice_label": "Verifier",
                "extras": [{**_field({}, "label", verifier["label"]), "placeholder": "default: the name"}],
            },
        },
    }  # fmt: skip
    for section, prop in schema["properties"].items():
        body = _resolve(schema["$defs"], prop)
        for key, sub in body.get("properties", {}).items():
            if "x-choices" in sub:
                specs[f"{section}.{key}"] = _axis_editor(key, sub)
    specs["rubric"] = {
        **_object(schema["$defs"], _resolve(schema["$defs"], _non_null(prop=schema["properties"]["rubric"]))),
        "key": "rubric",
        "label": "Rubric",
        "nullable": True,
    }
    return specs


def default_params(choices: list[FieldSpec], name: str) -> dict[str, Any]:
    """The default params of choice ``name`` (what the editor fills in when it is chosen)."""
    chosen = next((c for c in choices if c["name"] == name), None)
    return dict(chosen["defaults"]) if chosen else {}


def _axis_editor(key: str, prop: Schema) -> FieldSpec:
    item: FieldSpec = {
        "kind": "method",
        "name_key": "name",
        "choices": method_choices(prop["x-choices"]),
        "choice_label": "Method",
    }
    text = label(key, prop)
    if prop.get("type") == "array" or "items" in prop:
        noun = text.lower().removesuffix("s") if text.lower().endswith("s") else "method"
        item["choice_label"] = noun.capitalize()
        return {
            "kind": "list",
            "key": key,
            "label": text,
            "help": prop.get("description", ""),
            "item": item,
            "max": prop.get("maxItems"),
            "noun": noun,
        }
    return {**item, "key": key, "label": text, "help": prop.get("description", "")}


def label(key: str, prop: Schema) -> str:
    """A field's label: its schema title when one was written, else its key in words ("Name or path");
    pydantic's own titles ("Name Or Path") are the key title-cased and read worse."""
    title = prop.get("title")
    if title and title != key.replace("_", " ").title():
        return str(title)
    return key.replace("_", " ").capitalize()


def _choice(name: str, description: str, params_schema: Schema) -> FieldSpec:
    fields = param_fields(params_schema)
    return {
        "name": name, "description": description, "fields": fields,
        "defaults": {f["key"]: f.get("default") for f in fields},
        "free": bool(params_schema.get("additionalProperties")) and not fields,  # any keys: one JSON box
    }  # fmt: skip


def _field(defs: Schema, key: str, prop: Schema) -> FieldSpec:
    """One input, or a nested object / list editor, for property ``key``."""
    nullable, body = _nullable(defs, prop)
    spec: FieldSpec = {
        "key": key, "label": label(key, prop),
        "help": prop.get("description") or body.get("description", ""), "nullable": nullable,
        "default": prop.get("default"),
    }  # fmt: skip
    kind = body.get("type")
    if "enum" in body:
        spec.update(kind="select", options=[[v, ""] for v in body["enum"]])
    elif kind == "boolean" and nullable:  # null means "decide for me": a checkbox could not say it
        spec.update(kind="select", options=[[None, "auto"], [True, "true"], [False, "false"]])
    elif kind == "boolean":
        spec.update(kind="checkbox")
    elif kind in ("integer", "number"):
        spec.update(
            kind=kind,
            min=body.get("minimum", body.get("exclusiveMinimum")),
            max=body.get("maximum", body.get("exclusiveMaximum")),
        )
    elif kind == "string":
        spec.update(kind="textarea" if key in MULTILINE else "text", max_length=body.get("maxLength"))
    elif kind == "object" and body.get("properties"):
        spec.update(_object(defs, body))
    elif kind == "array" and "$ref" in body.get("items", {}):
        spec.update(
            kind="list",
            item=_object(defs, _resolve(defs, body["items"])),
            max=body.get("maxItems"),
            noun=NOUNS.get(key, key.removesuffix("s")),
        )
    else:
        spec.update(kind="json")  # free-form mappings, lists of scalars, unions: a small JSON box
    if key in SHOWN_WHEN:
        spec["shown_when"] = SHOWN_WHEN[key]
    return spec


def _object(defs: Schema, body: Schema) -> FieldSpec:
    if body.get("title") == "RuleSpec":  # a rule: a choice of the rubric rule registry, keyed "type"
        return {"kind": "method", "name_key": "type", "choices": rule_choices(), "choice_label": "Rule type"}
    return {"kind": "object", "fields": [_field(defs, k, p) for k, p in body.get("properties", {}).items()]}


def _nullable(defs: Schema, prop: Schema) -> tuple[bool, Schema]:
    options = prop.get("anyOf")
    if not options:
        return False, _resolve(defs, prop)
    non_null = [o for o in options if o.get("type") != "null"]
    nullable = len(non_null) < len(options)
    if len(non_null) == 1:
        return nullable, _resolve(defs, non_null[0])
    return nullable, {"type": "json"}


def _non_null(*, prop: Schema) -> Schema:
    return next((o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"), prop)


def _resolve(defs: Schema, prop: Schema) -> Schema:
    ref = prop.get("$ref")
    if not ref:
        return prop
    resolved: Schema = defs[ref.rsplit("/", 1)[-1]]
    return resolved
