"""Help texts are shown in the web form: they cite papers by name, never issue numbers or seed-file lines."""

from __future__ import annotations

import re
from typing import Any

import pytest

from trainer.config import ExperimentConfig
from trainer.evaluation.config import BenchmarkConfig
from trainer.rubrics.config import RubricConfig
from trainer.verifiers import VERIFIERS

INTERNAL = re.compile(r"\b00[14]:L\d+|shared/|METHODS\.md|[Ii]ssue \d+")


def descriptions(schema: Any) -> list[str]:
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                found.append(node["description"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


SCHEMAS = {
    "experiment": ExperimentConfig.model_json_schema(),
    "benchmark": BenchmarkConfig.model_json_schema(),
    "rubric": RubricConfig.model_json_schema(),
    **{f"verifier {n}": VERIFIERS.get(n).Params.model_json_schema() for n in VERIFIERS.names()},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_no_help_text_cites_an_issue_or_a_seed_line(name: str) -> None:
    texts = descriptions(SCHEMAS[name])
    assert texts, f"{name}: the schema has no help texts"
    cited = [t[:120] for t in texts if INTERNAL.search(t)]
    assert cited == [], cited


def test_the_walk_reaches_every_method_description_and_param_help_text() -> None:
    """Method knobs moved into each method's params: their help texts sit in the choice fields' x-choices."""
    from trainer.methods.axes import AXES

    texts = set(descriptions(SCHEMAS["experiment"]))
    for field, axis in AXES.items():
        for entry in axis.choices():
            assert entry.description in texts, (field, entry.name)
            for param, info in entry.params.model_fields.items():
                assert info.description in texts, (field, entry.name, param)
