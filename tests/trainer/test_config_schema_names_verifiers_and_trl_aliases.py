"""The config schema lists every registered verifier as an enum with ``x-choices`` (as the method axes do),
and documents TRL's ``top_entropy_quantile`` as an alias that validates to the native field."""

from __future__ import annotations

import json
from typing import Any

from trainer.config import ExperimentConfig, config_from_dict, config_schema
from trainer.evaluation.config import BenchmarkConfig
from trainer.verifiers import VERIFIERS


def verifier_name(schema: dict[str, Any]) -> dict[str, Any]:
    prop: dict[str, Any] = schema["$defs"]["VerifierSpec"]["properties"]["name"]
    return prop


def test_the_verifier_name_is_an_enum_of_every_registered_verifier() -> None:
    prop = verifier_name(config_schema())
    assert prop["enum"] == VERIFIERS.names()
    assert {"code", "chain_arithmetic", "math", "exact"} <= set(prop["enum"])


def test_each_verifier_choice_has_a_one_line_description_and_its_params_schema() -> None:
    choices = verifier_name(config_schema())["x-choices"]
    assert [c["name"] for c in choices] == VERIFIERS.names()
    for choice in choices:
        assert choice["description"] and "\n" not in choice["description"], choice["name"]
        own = VERIFIERS.get(choice["name"]).Params.model_json_schema()
        if "$defs" not in own:
            assert choice["params"] == own
        assert "$defs" not in choice["params"] and "$ref" not in json.dumps(
            choice["params"]
        )  # written in place
        assert set(choice["params"]["properties"]) == set(own["properties"])


def test_a_benchmark_schema_lists_the_same_verifiers() -> None:
    assert verifier_name(BenchmarkConfig.model_json_schema())["enum"] == VERIFIERS.names()


def test_top_entropy_quantile_is_a_documented_alias_in_the_algorithm_schema() -> None:
    algorithm = config_schema()["$defs"]["AlgorithmConfig"]
    alias = algorithm["x-aliases"]["top_entropy_quantile"]
    assert (alias["to"], alias["method"], alias["trl"]) == (
        "token_credit.params.quantile",
        "top_entropy",
        True,
    )
    assert "TRL" in alias["description"]
    assert "top_entropy_quantile" in algorithm["properties"]["token_credit"]["description"]


def test_a_trl_named_config_validates_to_the_same_object_as_the_native_one() -> None:
    trl_named = config_from_dict({"algorithm": {"token_credit": "top_entropy", "top_entropy_quantile": 0.2}})
    native = config_from_dict(
        {"algorithm": {"token_credit": {"name": "top_entropy", "params": {"quantile": 0.2}}}}
    )
    assert trl_named == native
    assert trl_named.model_dump() == ExperimentConfig.model_validate(native.model_dump()).model_dump()
