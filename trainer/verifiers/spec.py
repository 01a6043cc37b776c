"""One reward function of an experiment config (``verifiers: [...]``): a registry name and its parameters."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.verifiers.base import VERIFIERS


def verifier_summary(name: str) -> str:
    """The first paragraph of a verifier's docstring, on one line (the form's and the schema's description)."""
    doc = (VERIFIERS.get(name).__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.replace("``", "").split())


def _name_choices(schema: dict[str, Any]) -> None:
    """The ``name`` property's schema, filled from the registry when the schema is generated (so a verifier
    registered later is listed too): an enum of the names, with ``x-choices`` as the method axes give them
    (trainer/config/choice.py): each name, its one-line description and its params' schema."""
    names = VERIFIERS.names()
    schema["enum"] = names
    schema["description"] = "The verifier (registry name): " + "; ".join(
        f"'{name}': {verifier_summary(name)}" for name in names
    )
    schema["x-default"] = None  # required: the config's own default list names 'exact'
    schema["x-choices"] = [
        {
            "name": name,
            "description": verifier_summary(name),
            "params": params_schema(name),
        }
        for name in names
    ]


def params_schema(name: str) -> dict[str, Any]:
    """A verifier's params schema with its ``$defs`` written in place: it sits inside the config's own schema,
    where a ``$ref`` to the params' definitions would point at the config's (pydantic fails on it)."""
    schema = VERIFIERS.get(name).Params.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any, depth: int = 0) -> Any:
        if depth > 32:  # a self-referencing params model: leave the rest as it is
            return node
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return inline({**defs[ref[8:]], **rest}, depth + 1)
            return {k: inline(v, depth + 1) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v, depth + 1) for v in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined


class VerifierSpec(BoundedModel):
    """One reward function: a verifier registry name and its parameters."""

    # Validated as a string here; an unknown name is refused where the config is checked as a whole
    # (ExperimentConfig, BenchmarkConfig), with the valid names in the message.
    name: str = Field(max_length=100, json_schema_extra=_name_choices)
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Verifier parameters, validated by the verifier's own model (listed under name's x-choices).",
    )
    label: str | None = Field(
        None, max_length=100, description="Name used in metrics (reward/<label>_mean); default: name."
    )

    @property
    def key(self) -> str:
        return self.label or self.name
