"""The environment registry: duplicate names refused, unknown names and bad params answered with the valid ones."""

from __future__ import annotations

import pytest

from tests.trainer.environments.env_helpers import chain_scorer
from trainer.environments import ENVIRONMENTS, environment_factory, environment_params
from trainer.environments.calculator import CalculatorEnvironment
from trainer.errors import ConfigError


def test_the_built_in_environments_are_registered() -> None:
    assert {"calculator", "python", "self_correction"} <= set(ENVIRONMENTS.names())


def test_a_duplicate_name_is_refused() -> None:
    with pytest.raises(ValueError, match="environment 'calculator' is already registered"):
        ENVIRONMENTS.register("calculator")(CalculatorEnvironment)


def test_an_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown environment 'calculater'; valid names are: .*calculator"):
        environment_factory("calculater", {}, chain_scorer())


def test_bad_params_name_the_field_and_the_valid_keys() -> None:
    with pytest.raises(ConfigError, match="timeout_s: Input should be less than or equal to 60"):
        environment_params("calculator", {"timeout_s": 1e6})
    with pytest.raises(ConfigError, match="retry: unknown parameter; valid: retry_message"):
        environment_params("self_correction", {"retry": "x"})


def test_each_episode_gets_a_fresh_environment() -> None:
    make = environment_factory("self_correction", {}, chain_scorer())
    assert make() is not make()
