"""The experiment config: defaults, files, and errors that say what to change."""

import json
import re
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
    with pytest.raises(
        ConfigError,
        match=r"algorithm\.advantage_estimator\.name: unknown advantage estimator 'ppo'; "
        r"valid names are: dr_grpo, grpo, reinforce_pp, rloo",
    ):
        config_from_dict({"algorithm": {"advantage_estimator": "ppo"}})


def test_an_unknown_verifier_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"verifier 'exactly' is unknown; valid: .*exact"):
        config_from_dict({"verifiers": [{"name": "exactly"}]})


def test_reward_weights_must_match_the_verifiers() -> None:
    with pytest.raises(ConfigError, match="one weight per verifier"):
        config_from_dict({"algorithm": {"reward_weights": [1.0, 0.5]}})


def test_scale_rewards_only_with_grpo() -> None:
    with pytest.raises(
        ConfigError, match="scale_rewards is a parameter of advantage_estimator 'grpo', which this"
    ):
        config_from_dict({"algorithm": {"advantage_estimator": "rloo", "scale_rewards": "batch"}})
    with pytest.raises(
        ConfigError, match=r"algorithm\.advantage_estimator\.params: .*'rloo': params\.scale_rewards"
    ):
        config_from_dict(
            {"algorithm": {"advantage_estimator": {"name": "rloo", "params": {"scale_rewards": "batch"}}}}
        )


def test_file_source_needs_a_path() -> None:
    with pytest.raises(ConfigError, match=r"data: .*set data.path"):
        config_from_dict({"data": {"source": "file"}})


def test_a_negative_learning_rate_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"training\.learning_rate"):
        config_from_dict({"training": {"learning_rate": -1}})


def test_top_entropy_quantile_without_top_entropy_credit_is_an_error_not_a_switch() -> None:
    # Earlier versions silently switched token_credit to 'top_entropy' here; now the error names the fix.
    fix = "choose it with token_credit: {name: top_entropy, params: {quantile: 0.2}}"
    with pytest.raises(ConfigError, match=re.escape(fix)):
        config_from_dict({"algorithm": {"top_entropy_quantile": 0.2}})
    with_credit = config_from_dict(
        {"algorithm": {"token_credit": "top_entropy", "top_entropy_quantile": 0.3}}
    )
    assert with_credit.algorithm.token_credit == "top_entropy"
    assert with_credit.algorithm.token_credit.params.quantile == 0.3
    # 1.0, the old default of the flat field, is what earlier saved configs list: dropped, nothing switched on
    assert config_from_dict({"algorithm": {"top_entropy_quantile": 1.0}}).algorithm.token_credit == "uniform"


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
            if "x-choices" in prop:  # a method choice: each method and each of its params is documented
                for choice in prop["x-choices"]:
                    if not choice["description"]:
                        undocumented.append(f"{name}.{field} {choice['name']}")
                    for param, param_prop in choice["params"].get("properties", {}).items():
                        if "description" not in param_prop:
                            undocumented.append(f"{name}.{field} {choice['name']}.params.{param}")
            # The params of a {name, params} choice model are documented per method, in its field's x-choices.
            is_choice_params = field == "params" and name.endswith("Choice")
            if "description" not in prop and not is_choice_params:
                undocumented.append(f"{name}.{field}")
    assert undocumented == []


def test_every_method_choice_lists_its_methods_with_their_params_in_the_schema() -> None:
    schema = config_schema()
    choice_fields = [
        (name, field, prop)
        for name, definition in schema["$defs"].items()
        for field, prop in definition.get("properties", {}).items()
        if "x-choices" in prop
    ]
    assert {f"{name}.{field}" for name, field, _ in choice_fields} >= {
        "AlgorithmConfig.token_credit",
        "RolloutBudgetConfig.allocator",
        "TeacherConfig.fusion",
        "ShapingConfig.reward_shaping",
    }
    for name, field, prop in choice_fields:
        names = [c["name"] for c in prop["x-choices"]]
        default = prop["x-default"]  # the axis's default method; None for a list of choices
        rest = [n for n in names if n != default]
        assert names and rest == sorted(rest), (
            name,
            field,
        )  # the default (the plain baseline) first, then by name
        assert default is None or names[0] == default, (name, field)
        assert all(c["params"]["type"] == "object" for c in prop["x-choices"]), (name, field)


TEACHER = {"name_or_path": "tiny:addition-teacher"}


def test_legacy_flat_keys_are_moved_into_the_chosen_methods_params() -> None:
    cfg = config_from_dict({"algorithm": {"token_credit": "ecr", "ecr_strength": 2}, "teacher": TEACHER})
    assert cfg.algorithm.token_credit == "ecr" and cfg.algorithm.token_credit.params.strength == 2
    assert cfg.algorithm.token_credit.params.min_weight == 0.1  # the rest of the method's params: defaults
    cfg = config_from_dict(
        {
            "algorithm": {
                "scale_rewards": "none",
                "importance_sampling_level": "segment",
                "segment_min_tokens": 2,
            },
            "budget": {"allocator": "vigor", "vigor_rounds": 3},
            "teacher": {**TEACHER, "fusion": "opd", "opd_coef": 0.5, "opd_until_step": 4},
            "shaping": {"overlong_buffer": 4, "overlong_penalty_factor": 2.0},
        }
    )
    assert cfg.algorithm.advantage_estimator.params.scale_rewards == "none"  # grpo, the default estimator
    assert cfg.algorithm.importance_sampling_level.params.min_tokens == 2
    assert cfg.budget.allocator.params.rounds == 3
    assert (cfg.teacher.fusion.params.coef, cfg.teacher.fusion.params.until_step) == (0.5, 4)
    [overlong] = cfg.shaping.reward_shaping  # a flat switch (overlong_buffer > 0) chose the method
    assert overlong == "overlong_penalty" and (overlong.params.buffer, overlong.params.factor) == (4, 2.0)
    # What is saved is the new shape: no flat key survives, and it loads back to the same config.
    dumped = cfg.model_dump()
    assert "scale_rewards" not in dumped["algorithm"] and "vigor_rounds" not in dumped["budget"]
    assert dumped["teacher"]["fusion"] == {"name": "opd", "params": {"coef": 0.5, "until_step": 4}}
    assert config_from_dict(dumped) == cfg


def test_a_legacy_flat_key_of_an_unchosen_method_holding_its_old_default_is_dropped() -> None:
    cfg = config_from_dict(
        {"algorithm": {"ecr_strength": 1.0, "gapo_max_scale": 3.0}, "budget": {"vigor_rounds": 2}}
    )
    assert cfg.algorithm.token_credit == "uniform" and cfg.algorithm.clip_mode == "fixed"
    assert cfg.budget.allocator == "fixed"


@pytest.mark.parametrize(
    ("section", "key", "value", "fix"),
    [
        ("algorithm", "ecr_strength", 2, "choose it with token_credit: {name: ecr, params: {strength: 2}}"),
        (
            "algorithm",
            "gapo_max_scale",
            2.0,
            "choose it with clip_mode: {name: gapo, params: {max_scale: 2.0}}",
        ),
        ("budget", "vigor_rounds", 3, "choose it with allocator: {name: vigor, params: {rounds: 3}}"),
        ("teacher", "puu_coef", 0.5, "choose it with fusion: {name: puu, params: {coef: 0.5}}"),
    ],
)
def test_a_legacy_flat_key_of_an_unchosen_method_is_refused_with_the_fix(
    section: str, key: str, value: object, fix: str
) -> None:
    with pytest.raises(
        ConfigError,
        match=rf"{section}: {key} is a parameter of .*which this config does not choose: "
        rf"remove {key}, or {re.escape(fix)}",
    ):
        config_from_dict({section: {key: value}})


def test_a_legacy_flat_key_and_the_params_must_agree() -> None:
    with pytest.raises(ConfigError, match=r"ecr_strength \(2\) and the params' strength \(3\) disagree"):
        config_from_dict(
            {
                "algorithm": {"token_credit": {"name": "ecr", "params": {"strength": 3}}, "ecr_strength": 2},
                "teacher": TEACHER,
            }
        )


def test_a_bad_param_is_reported_at_its_choice_and_named() -> None:
    with pytest.raises(
        ConfigError,
        match=r"algorithm\.token_credit\.params: token credit 'ecr': params\.strength: "
        r"Input should be greater than 0",
    ):
        config_from_dict(
            {"algorithm": {"token_credit": {"name": "ecr", "params": {"strength": -1}}}, "teacher": TEACHER}
        )
    # A misspelt parameter is named, with the method's parameters listed.
    with pytest.raises(
        ConfigError,
        match=r"algorithm\.token_credit\.params: .*params\.strenght: .*"
        r"\(its parameters: strength, min_weight\)",
    ):
        config_from_dict(
            {"algorithm": {"token_credit": {"name": "ecr", "params": {"strenght": 2}}}, "teacher": TEACHER}
        )
    with pytest.raises(
        ConfigError, match=r"budget\.allocator\.params: rollout allocator 'vigor': params\.rounds"
    ):
        config_from_dict({"budget": {"allocator": {"name": "vigor", "params": {"rounds": 0}}}})
