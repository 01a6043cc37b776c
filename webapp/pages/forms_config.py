"""The experiment form, generated from the trainer config's JSON schema (``trainer.config.config_schema``).

Layout: what a GRPO user sets for every run comes first, open (``ESSENTIALS``: the model, the data, the
verifiers, steps, batch, group size, learning rate, completion length, temperature); every other field sits
in a folded section per config section ("Advanced: rollout", ...), whose summary counts the values that
differ from the defaults. The config's own ``name`` is not asked for: the experiment's name is written
into it (webapp/experiments/services.py), so the page shows one "Name".

Plain fields are inputs by type (select for an enum, checkbox, number, text); the verifiers, every method
choice (a property with ``x-choices``, trainer/config/choice.py) and the rubric are structured editors built
by static/js/config_editors.js from ``form_page_data`` (webapp/pages/forms_editors.py). Every input that
holds a config value carries its ``data-path``; an editor keeps its value as JSON in a hidden textarea
with the editor's path, so static/js/experiment_form.js reads the form back into the same config JSON the
REST API validates with the same pydantic model, and shows each error of the answer at its field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from trainer.config import ExperimentConfig, config_schema
from trainer.models.tiny_recipes import RECIPES
from webapp.pages.forms_editors import editor_specs, label

Schema = dict[str, Any]

# (key, title, config paths): the open part of the form, in this order.
ESSENTIALS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("model", "Model", ("model.name_or_path",)),
    ("data", "Data", ("data.source", "data.path")),
    ("reward", "Reward", ("verifiers",)),
    ("training", "Training", (
        "training.max_steps", "training.prompts_per_step", "rollout.num_generations", "training.learning_rate",
        "rollout.max_completion_length", "rollout.temperature",
    )),
)  # fmt: skip
LEFT_OUT = frozenset({"name"})  # the experiment's name is the config's
PLACED = {"seed": "training"}  # top-level scalars shown in a section
TITLES = {
    "model": "Advanced: model", "data": "Advanced: data", "rollout": "Advanced: rollout", "algorithm": "Algorithm",
    "training": "Advanced: training", "checkpoint": "Checkpoints", "evaluation": "Periodic evaluation",
    "shaping": "Reward and advantage shaping", "budget": "Rollout budget and prompt selection",
    "teacher": "Teacher (distillation)", "rubric": "Rubric reward",
    "reward_watch": "Reward hacking watch", "reward_absence": "Absent scores (reward model and judge failures)",
    "environment": "Multi-turn environment (tools, self-correction)",
}  # fmt: skip
LABELS = {
    "model.name_or_path": "Model", "data.source": "Data source", "data.path": "Data file",
    "training.max_steps": "Steps", "training.prompts_per_step": "Prompts per step",
    "rollout.num_generations": "Group size", "rollout.max_completion_length": "Max new tokens",
    "algorithm.kl_estimator": "KL estimator", "model.lora_r": "LoRA rank", "model.lora_alpha": "LoRA alpha",
    "model.lora_dropout": "LoRA dropout", "model.lora_target_modules": "LoRA target modules",
    "model.autocast_bf16": "Autocast bf16", "rollout.top_p": "Top-p", "rollout.top_k": "Top-k",
    "rollout.vllm_mode": "vLLM mode", "rollout.vllm_server_url": "vLLM server URL",
    "rollout.vllm_gpu_memory_utilization": "vLLM GPU memory share", "rollout.vllm_kv_cache_gb": "vLLM KV cache (GiB)",
    "rollout.vllm_max_model_len": "vLLM context length", "training.fsdp": "FSDP",
}  # fmt: skip


@dataclass(frozen=True)
class ConfigField:
    path: str  # dotted, relative to the config: "training.learning_rate"
    label: str
    kind: str  # "select" | "checkbox" | "integer" | "number" | "text" | "textarea" | "json" | "editor"
    help: str
    value: Any
    default: Any = None
    nullable: bool = False
    choices: tuple[Any, ...] = ()  # a select's values (JSON values: strings, booleans, null)
    minimum: float | None = None
    maximum: float | None = None
    suggestions: str = ""  # the id of a <datalist> offering known values (model names)

    @property
    def options(self) -> list[tuple[str, str, bool]]:
        """(option value, shown text, selected) per choice; values are JSON when not all are strings."""
        choices = list(self.choices)
        if (
            self.value not in choices
        ):  # a saved or pasted value the schema does not list: shown, refused on save
            choices.append(self.value)
        return [(self._option_value(c), _shown(c), c == self.value) for c in choices]

    @property
    def data_kind(self) -> str:
        if self.kind == "select" and not all(isinstance(c, str) for c in self.choices):
            return "select-json"
        return "json" if self.kind == "editor" else self.kind

    def _option_value(self, value: Any) -> str:
        return json.dumps(value) if self.data_kind == "select-json" else str(value)

    @property
    def changed(self) -> bool:
        return bool(self.value != self.default)

    @property
    def config_key(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def error_key(self) -> str:
        """The key the API's ``extra.fields`` uses for this field."""
        return f"config.{self.path}"

    @property
    def input_id(self) -> str:
        return "cfg-" + self.path.replace(".", "-")

    @property
    def text(self) -> str:
        """The value as an input's text: '' for null, JSON for lists, objects and editors."""
        if self.kind == "json" and self.value is None and self.nullable:
            return ""  # read back as null
        if self.kind in ("json", "editor"):
            return json.dumps(self.value, indent=None if self.kind == "editor" else 2)
        if self.value is None:
            return ""
        return str(self.value)

    @property
    def rows(self) -> int:
        """Text-area height: the value's lines, at least 2, at most 8."""
        return max(2, min(8, self.text.count("\n") + 1))


@dataclass(frozen=True)
class ConfigGroup:
    key: str
    title: str
    fields: tuple[ConfigField, ...]


@dataclass(frozen=True)
class ConfigSection:
    key: str
    title: str
    help: str
    groups: tuple[ConfigGroup, ...] = field(default=())
    own_fields: tuple[ConfigField, ...] = field(default=())
    folded: bool = True

    @property
    def fields(self) -> tuple[ConfigField, ...]:
        return tuple(f for g in self.groups for f in g.fields) + self.own_fields

    @property
    def changed(self) -> int:
        """How many of the section's values differ from the defaults (shown on its folded summary)."""
        return sum(1 for f in self.fields if f.changed)


def default_config() -> dict[str, Any]:
    return ExperimentConfig().model_dump(mode="json")


def config_sections(*, config: dict[str, Any] | None = None) -> list[ConfigSection]:
    """The form: the open essentials first, then one folded section per remaining config section,
    prefilled with ``config`` (an experiment's saved config) or the defaults."""
    fields = config_fields(config=config)
    essentials = ConfigSection(
        key="essentials", title="Essentials", help="", folded=False,
        groups=tuple(ConfigGroup(key, title, tuple(fields[p] for p in paths)) for key, title, paths in ESSENTIALS),
    )  # fmt: skip
    shown = {p for _, _, paths in ESSENTIALS for p in paths}
    schema = config_schema()
    sections = [essentials]
    for name, prop in schema["properties"].items():
        members = tuple(f for path, f in fields.items() if path not in shown and _section_of(path) == name)
        if not members:
            continue
        body = _resolve(schema, _non_null(prop))
        description = body.get("description", "") if body.get("properties") else prop.get("description", "")
        sections.append(
            ConfigSection(
                key=name, title=TITLES.get(name, label(name, {})), help=description, own_fields=members
            )
        )
    return sections


def config_fields(*, config: dict[str, Any] | None = None) -> dict[str, ConfigField]:
    """Every field of the form by config path, in schema order (the config's own name left out)."""
    schema = config_schema()
    defaults = default_config()
    values = config or defaults
    editors = editor_specs()
    out: dict[str, ConfigField] = {}
    for name, prop in schema["properties"].items():
        if name in LEFT_OUT:
            continue
        body = _resolve(schema, prop)
        if name in editors:
            out[name] = _editor(name, prop, values.get(name), defaults.get(name))
        elif body.get("type") == "object" and "properties" in body:
            section_values, section_defaults = values.get(name) or {}, defaults.get(name) or {}
            for key, sub in body["properties"].items():
                path = f"{name}.{key}"
                maker = _editor if path in editors else _field
                out[path] = maker(path, sub, section_values.get(key), section_defaults.get(key), schema)
        else:
            out[name] = _field(name, prop, values.get(name), defaults.get(name), schema)
    return out


def model_suggestions() -> list[tuple[str, str]]:
    """(name, what it is) of the built-in models, for the model fields' suggestion list."""
    return [(name, recipe.summary) for name, recipe in RECIPES.items()]


def form_page_data(
    *, config: dict[str, Any] | None, datasets: list[dict[str, Any]], dataset: int | None
) -> dict[str, Any]:
    """What the page's scripts read (``json_script``): the editors' field descriptions, the defaults (to
    count changed values and to fill what a pasted config leaves out), the project's datasets and the one
    to preselect (``?dataset=<id>``: it must be one of them, which the script checks)."""
    return {
        "editors": editor_specs(),
        "defaults": default_config(),
        "datasets": datasets,
        "dataset": dataset,
        "urls": {"parse": reverse("config-parse"), "yaml": reverse("config-yaml")},
    }


def _shown(value: Any) -> str:
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _section_of(path: str) -> str:
    head = path.split(".", 1)[0]
    return PLACED.get(head, head)


def _editor(path: str, prop: Schema, value: Any, default: Any, schema: Schema | None = None) -> ConfigField:
    key = path.rsplit(".", 1)[-1]
    return ConfigField(
        path=path,
        label=LABELS.get(path) or label(key, prop),
        kind="editor",
        help=prop.get("description", ""),
        value=value,
        default=default,
    )


def _field(path: str, prop: Schema, value: Any, default: Any, schema: Schema | None = None) -> ConfigField:
    kind, nullable, body = _kind(schema or config_schema(), prop)
    choices: tuple[Any, ...] = tuple(body.get("enum", ()))
    if kind == "select" and nullable:
        choices = (None, *choices)
    if kind == "checkbox" and nullable:  # null means "decide for me": a checkbox could not say it
        kind, choices = "select", (None, True, False)
    if kind == "text" and path.rsplit(".", 1)[-1] in (
        "prompt_template",
        "privileged_template",
        "system_prompt",
    ):
        kind = "textarea"
    return ConfigField(
        path=path,
        label=LABELS.get(path) or label(path.rsplit(".", 1)[-1], prop),
        kind=kind,
        help=prop.get("description", ""),
        value=value,
        default=default,
        nullable=nullable,
        choices=choices,
        minimum=body.get("minimum", body.get("exclusiveMinimum")),
        maximum=body.get("maximum", body.get("exclusiveMaximum")),
        suggestions="model-choices" if path.endswith("name_or_path") else "",
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


def _non_null(prop: Schema) -> Schema:
    return next((o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"), prop)


def _resolve(schema: Schema, prop: Schema) -> Schema:
    ref = prop.get("$ref")
    if not ref:
        return prop
    resolved: Schema = schema["$defs"][ref.rsplit("/", 1)[-1]]
    return resolved
