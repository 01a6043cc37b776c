"""Every number a config holds is bounded: a schema walk fails on any unbounded field (issue 13 part 5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from trainer.config import ExperimentConfig, config_from_dict
from trainer.errors import ConfigError
from trainer.evaluation.config import BenchmarkConfig
from trainer.rubrics.config import RubricConfig
from trainer.verifiers import VERIFIERS

SCHEMAS: list[type[BaseModel]] = [ExperimentConfig, BenchmarkConfig, RubricConfig]
SCHEMAS += [VERIFIERS.get(name).Params for name in VERIFIERS.names()]


def numeric_fields(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, sub-schema) of every integer / number schema, through $defs, anyOf, items and properties."""
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in ("integer", "number"):
                yield path, node
            for key, child in node.items():
                stack.append((f"{path}.{key}" if path else key, child))
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(node))


@pytest.mark.parametrize("model", SCHEMAS, ids=lambda m: m.__name__)
def test_every_integer_and_number_in_the_schema_has_a_minimum_and_a_maximum(model: type[BaseModel]) -> None:
    unbounded = [
        path
        for path, node in numeric_fields(model.model_json_schema())
        if not ({"minimum", "exclusiveMinimum"} & set(node) and {"maximum", "exclusiveMaximum"} & set(node))
    ]
    assert not unbounded, f"unbounded numeric fields in {model.__name__}: {unbounded}"


@pytest.mark.parametrize("model", SCHEMAS, ids=lambda m: m.__name__)
def test_every_list_in_the_schema_has_a_maximum_length(model: type[BaseModel]) -> None:
    stack: list[tuple[str, Any]] = [("", model.model_json_schema())]
    unbounded = []
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "array" and "maxItems" not in node:
                unbounded.append(path)
            stack.extend((f"{path}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))
    assert not unbounded, f"lists without maxItems in {model.__name__}: {unbounded}"


def test_a_huge_max_steps_is_refused_when_the_config_is_built() -> None:
    with pytest.raises(ConfigError, match=r"training\.max_steps"):
        config_from_dict({"training": {"max_steps": 10**30}})


def test_a_seed_beyond_32_bits_is_refused() -> None:
    with pytest.raises(ConfigError, match="seed"):
        config_from_dict({"seed": 2**70})


@pytest.mark.parametrize("value", [float("inf"), float("nan"), "inf", "Infinity", "NaN"])
def test_a_non_finite_learning_rate_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match=r"training\.learning_rate"):
        config_from_dict({"training": {"learning_rate": value}})


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("rollout", "num_generations", 10**6),
        ("training", "prompts_per_step", 10**6),
        ("rollout", "max_completion_length", 10**9),
    ],
)
def test_batch_sizes_beyond_their_maximum_are_refused(section: str, field: str, value: int) -> None:
    with pytest.raises(ConfigError, match=rf"{section}\.{field}"):
        config_from_dict({section: {field: value}})


def test_a_nul_character_in_a_config_string_is_refused() -> None:
    with pytest.raises(ConfigError, match="NUL"):
        config_from_dict({"name": "run\x00one"})


def test_a_lone_surrogate_inside_free_form_params_is_refused_with_its_path() -> None:
    with pytest.raises(ConfigError, match=r"data.task_config.level: contains a lone UTF-16 surrogate"):
        config_from_dict({"data": {"task_config": {"level": "\ud800"}}})


def test_a_non_finite_number_inside_verifier_params_is_refused() -> None:
    with pytest.raises(ConfigError, match="numbers must be finite"):
        config_from_dict({"verifiers": [{"name": "numeric", "params": {"abs_tol": float("inf")}}]})


def test_a_benchmark_with_a_huge_max_tokens_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="max_tokens"):
        BenchmarkConfig(name="b", max_tokens=10**12)


def test_the_defaults_still_validate() -> None:
    assert ExperimentConfig().training.max_steps == 100


def test_a_yaml_config_with_aliases_is_refused_before_it_expands(tmp_path: Path) -> None:
    from trainer.config import load_config

    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\ndata:\n  task_config:\n    bomb: *a8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="aliases"):
        load_config(path)


def test_a_deeply_nested_yaml_config_is_refused(tmp_path: Path) -> None:
    from trainer.config import load_config

    path = tmp_path / "deep.yaml"
    path.write_text("data:\n  task_config:\n    x: " + "[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="nests more than 64 levels"):
        load_config(path)


def test_a_deeply_nested_json_config_file_is_refused(tmp_path: Path) -> None:
    from trainer.config import load_config

    path = tmp_path / "deep.json"
    path.write_text(
        '{"data": {"task_config": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}}", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="nests more than 64 levels"):
        load_config(path)
