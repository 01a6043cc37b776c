"""TRL's and verl's config names read as this config's dotted paths (trainer/config/outside_names.py), the
one table the compare page and the runs table read outside runs' configs through."""

from __future__ import annotations

from typing import Any

import pytest

from trainer.config import ExperimentConfig
from trainer.config.legacy import aliases
from trainer.config.outside_names import NAMES_BY_SOURCE, TRL_NAMES, native_paths


def dotted(config: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(config, dict) or (prefix and not config):
        return {prefix: config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out.update(dotted(value, f"{prefix}.{key}" if prefix else key))
    return out


def test_trl_names_are_read_as_native_paths_and_the_rest_keep_their_names() -> None:
    flat, origin = native_paths(
        {"beta": 0.04, "learning_rate": 1e-6, "num_generations": 8, "bf16": True}, "trl"
    )
    assert flat == {
        "algorithm.beta": 0.04,
        "training.learning_rate": 1e-6,
        "rollout.num_generations": 8,
        "bf16": True,
    }
    assert origin == {
        "algorithm.beta": "beta",
        "training.learning_rate": "learning_rate",
        "rollout.num_generations": "num_generations",
    }


def test_trl_values_are_read_in_the_native_form() -> None:
    flat, _ = native_paths(
        {"use_vllm": True, "vllm_mode": "colocate", "scale_rewards": False, "top_k": None}, "trl"
    )
    assert flat == {
        "rollout.engine": "vllm",
        "rollout.vllm_mode": "colocated",
        "algorithm.advantage_estimator.params.scale_rewards": "none",
        "rollout.top_k": 0,
    }


def test_verl_dotted_names_are_read_as_native_paths_and_the_precise_name_wins() -> None:
    flat, origin = native_paths({
        "actor_rollout_ref.actor.optim.lr": 1e-6, "actor_rollout_ref.rollout.n": 5,
        "actor_rollout_ref.actor.clip_ratio": 0.2, "actor_rollout_ref.actor.clip_ratio_low": 0.18,
        "actor_rollout_ref.actor.loss_agg_mode": "token-mean", "algorithm.adv_estimator": "reinforce_plus_plus",
        "data.train_files": "gsm8k.parquet",
    }, "verl")  # fmt: skip
    assert flat == {
        "training.learning_rate": 1e-6,
        "rollout.num_generations": 5,
        "algorithm.epsilon": 0.18,
        "algorithm.loss_type.name": "dapo",
        "algorithm.advantage_estimator.name": "reinforce_pp",
        "data.train_files": "gsm8k.parquet",
    }
    assert origin["algorithm.epsilon"] == "actor_rollout_ref.actor.clip_ratio_low"


@pytest.mark.parametrize("source", ["native", "script", "import"])
def test_a_source_without_a_table_is_read_unchanged(source: str) -> None:
    assert native_paths({"beta": 0.1, "algorithm.beta": 0.2}, source) == (
        {"beta": 0.1, "algorithm.beta": 0.2},
        {},
    )


def test_every_native_path_of_the_table_is_a_path_of_the_native_config() -> None:
    chosen = ExperimentConfig.model_validate({"algorithm": {"token_credit": "top_entropy"}})
    paths = set(dotted(chosen.model_dump(mode="json")))
    wrong = {
        name: known.native
        for table in NAMES_BY_SOURCE.values()
        for name, known in table.items()
        if known.native not in paths
    }
    assert wrong == {}


def test_trl_aliases_in_the_schema_point_where_the_trl_table_reads_them() -> None:
    trl_aliases = {name: alias for name, alias in aliases("AlgorithmConfig").items() if alias["trl"]}
    assert set(trl_aliases) == {"scale_rewards", "top_entropy_quantile"}
    for name, alias in trl_aliases.items():
        assert TRL_NAMES[name].native == f"algorithm.{alias['to']}"
