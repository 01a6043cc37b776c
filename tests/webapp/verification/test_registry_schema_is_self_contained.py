"""The verifier registry's parameter schemas (the verifier pages' editors and ``/api/verifier-registry/``) are
self-contained: a nested params model's definitions are written in place, so no ``$ref`` points at a ``$defs``
the answer does not carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from trainer.verifiers import VERIFIERS
from trainer.verifiers.spec import params_schema
from webapp.verification.selectors import registry_schema

Api = Callable[[User | None], APIClient]


def dangling(node: Any) -> list[str]:
    """Every ``$ref`` / ``$defs`` key, and every string pointing into a ``$defs``, anywhere in ``node``."""
    if isinstance(node, dict):
        return [r for k, v in node.items() for r in ([k] if k in ("$ref", "$defs") else []) + dangling(v)]
    if isinstance(node, list):
        return [r for v in node for r in dangling(v)]
    return [node] if isinstance(node, str) and "#/$defs/" in node else []


def test_the_registry_answer_has_no_reference_to_a_missing_definition(api: Api, alice: User) -> None:
    items = api(alice).get("/api/verifier-registry/").json()
    assert items and dangling(items) == []
    for item in registry_schema():
        assert item["schema"] == params_schema(item["name"]), item["name"]


def test_a_nested_params_model_is_inlined_where_its_raw_schema_refers_to_defs() -> None:
    raw = VERIFIERS.get("judge").Params.model_json_schema()
    assert "$defs" in raw  # the judge's parse is a nested model: the raw schema would dangle
    inlined = params_schema("judge")
    assert dangling({k: v for k, v in inlined.items() if k != "properties"}) == []
    parse = inlined["properties"]["parse"]
    assert [o["title"] for o in parse["oneOf"]] == ["ScoreParse", "VerdictParse"]
    assert "$ref" not in str(parse["oneOf"])
