"""The experiment config: defaults, files, and errors that say what to change."""

import json
from pathlib import Path

import pytest

from trainer.config import config_from_dict, config_schema, load_config
from trainer.errors import ConfigError


def test_defaults_validate_and_use_trl_names() -> None:
    cfg = config_from_dict({})
    assert cfg.rollout.num_generations == 8
    assert cfg.algorithm.loss_type == "dapo"
    assert cfg.algorithm.clip_high == cfg.algorithm.epsilon
    assert cfg.reward_weights == [1.0]


def test_yaml_and_json_files_load_the_same(tmp_path: Path) -> None:
    data = {"training": {"max_steps": 7}, "algorithm": {"beta": 0.04}}
    (tmp_path / "a.json").write_text(json.dumps(data))
    (tmp_path / "a.yaml").write_text("training:\n  max_steps: 7\nalgorithm:\n  beta: 0.04\n")
    assert load_config(tmp_path / "a.json") == load_config(tmp_path / "a.yaml")


def test_an_unknown_field_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"training\.max_stepz"):
        config_from_dict({"training": {"max_stepz": 3}})


def test_an_unknown_estimator_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"advantage_estimator 'ppo'.*grpo"):
        config_from_dict({"algorithm": {"advantage_estimator": "ppo"}})


def test_an_unknown_verifier_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"verifier 'exactly' is unknown; valid: .*exact"):
        config_from_dict({"verifiers": [{"name": "exactly"}]})


def test_reward_weights_must_match_the_verifiers() -> None:
    with pytest.raises(ConfigError, match="one weight per verifier"):
        config_from_dict({"algorithm": {"reward_weights": [1.0, 0.5]}})


def test_scale_rewards_only_with_grpo() -> None:
    with pytest.raises(ConfigError, match="scale_rewards only applies"):
        config_from_dict({"algorithm": {"advantage_estimator": "rloo", "scale_rewards": "batch"}})


def test_file_source_needs_a_path() -> None:
    with pytest.raises(ConfigError, match=r"data: .*set data.path"):
        config_from_dict({"data": {"source": "file"}})


def test_a_negative_learning_rate_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"training\.learning_rate"):
        config_from_dict({"training": {"learning_rate": -1}})


def test_top_entropy_quantile_below_one_turns_on_entropy_masking() -> None:
    assert config_from_dict({"algorithm": {"top_entropy_quantile": 0.2}}).algorithm.token_credit == "top_entropy"


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("training: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml is not valid YAML"):
        load_config(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_the_schema_documents_every_field() -> None:
    schema = config_schema()
    undocumented = []
    for name, definition in schema["$defs"].items():
        for field, prop in definition.get("properties", {}).items():
            if "description" not in prop:
                undocumented.append(f"{name}.{field}")
    assert undocumented == []
