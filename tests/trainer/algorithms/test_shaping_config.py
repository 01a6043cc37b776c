"""Config errors for clip modes, segment IS and shaping: each says what to change."""

from typing import Any

import pytest

from trainer.config import config_from_dict
from trainer.errors import ConfigError


def build(**sections: Any) -> Any:
    return config_from_dict({"rollout": {"max_completion_length": 16}, **sections})


def test_defaults_leave_every_new_method_off() -> None:
    cfg = build()
    assert cfg.algorithm.clip_mode == "fixed" and not cfg.algorithm.dual_clip
    # No label-free reward, overlong penalty or length penalty; no rarity redistribution.
    assert cfg.shaping.reward_shaping == [] and cfg.shaping.advantage_shaping == []


def test_every_method_together_validates() -> None:
    cfg = build(
        algorithm={"importance_sampling_level": "segment", "clip_mode": "gapo", "dual_clip": True},
        shaping={
            "reward_shaping": [
                "majority_vote",
                {"name": "overlong_penalty", "params": {"buffer": 4}},
                {"name": "length_penalty", "params": {"coef": 0.1}},
            ],
            "advantage_shaping": ["rarity"],
        },
        data={"answer_field": None},
    )
    assert cfg.algorithm.importance_sampling_level == "segment"
    assert [c.name for c in cfg.shaping.reward_shaping] == [
        "majority_vote",
        "overlong_penalty",
        "length_penalty",
    ]
    assert [c.name for c in cfg.shaping.advantage_shaping] == ["rarity"]


def test_gapo_refuses_a_lower_bound_that_reaches_zero() -> None:
    with pytest.raises(ConfigError, match="lower max_scale or epsilon"):
        build(algorithm={"clip_mode": {"name": "gapo", "params": {"max_scale": 3.0}}, "epsilon": 0.4})


def test_dual_clip_c_must_exceed_one() -> None:
    with pytest.raises(ConfigError, match="dual_clip_c"):
        build(algorithm={"dual_clip": True, "dual_clip_c": 1.0})


def test_segment_level_refuses_segments_as_long_as_the_completion() -> None:
    with pytest.raises(
        ConfigError, match=r"min_tokens \(16\) >= rollout.max_completion_length .* use 'sequence'"
    ):
        build(algorithm={"importance_sampling_level": {"name": "segment", "params": {"min_tokens": 16}}})


def test_overlong_buffer_must_be_shorter_than_the_completion_limit() -> None:
    with pytest.raises(ConfigError, match=r"'overlong_penalty': buffer \(16\) must be below"):
        build(shaping={"reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 16}}]})


def test_regex_cue_needs_a_valid_pattern() -> None:
    with pytest.raises(ConfigError, match="cue is 'regex' but cue_pattern is empty"):
        build(shaping={"advantage_shaping": [{"name": "rarity", "params": {"cue": "regex"}}]})
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        build(
            shaping={
                "advantage_shaping": [{"name": "rarity", "params": {"cue": "regex", "cue_pattern": "("}}]
            }
        )


def test_a_cue_pattern_without_the_regex_cue_is_refused() -> None:
    with pytest.raises(ConfigError, match="cue_pattern is only used with cue 'regex'"):
        build(shaping={"advantage_shaping": [{"name": "rarity", "params": {"cue_pattern": "x"}}]})


def test_answer_extraction_errors_are_reported_on_the_shaping_section() -> None:
    located = r"shaping\.reward_shaping\.0\.params: .*answer_extract: extract='regex' needs a pattern"
    with pytest.raises(ConfigError, match=located):
        build(shaping={"reward_shaping": [{"name": "majority_vote", "params": {"answer_extract": "regex"}}]})


def test_a_verifier_label_cannot_shadow_a_shaping_term() -> None:
    with pytest.raises(ConfigError, match="reserved for shaping terms"):
        build(verifiers=[{"name": "exact", "label": "length_penalty"}])


def test_label_free_reward_refuses_allocators_that_decide_on_verifier_rewards() -> None:
    with pytest.raises(ConfigError, match="turn dynamic_sampling off"):
        build(shaping={"reward_shaping": ["majority_vote"]}, budget={"dynamic_sampling": True})


def test_new_fields_are_in_the_schema_with_descriptions() -> None:
    from trainer.config import config_schema

    schema = config_schema()
    shaping = schema["$defs"]["ShapingConfig"]["properties"]
    algorithm = schema["$defs"]["AlgorithmConfig"]["properties"]
    for props, names in [
        (shaping, ["reward_shaping", "advantage_shaping"]),
        (algorithm, ["clip_mode", "dual_clip_c"]),
    ]:
        for name in names:
            assert props[name]["description"]
    # Method knobs are documented in their method's params schema, listed in the choice field's x-choices.
    for props, field, method, param in [
        (shaping, "reward_shaping", "majority_vote", "combine"),
        (shaping, "reward_shaping", "overlong_penalty", "buffer"),
        (shaping, "advantage_shaping", "rarity", "cue"),
        (algorithm, "importance_sampling_level", "segment", "boundary_quantile"),
    ]:
        choices = {c["name"]: c for c in props[field]["x-choices"]}
        assert choices[method]["description"], (field, method)
        assert choices[method]["params"]["properties"][param]["description"], (field, method, param)
    assert "segment" in [c["name"] for c in algorithm["importance_sampling_level"]["x-choices"]]


def test_answer_extract_modes_match_the_verifiers_extraction_modes() -> None:
    from typing import get_args

    from trainer.config import AnswerExtractMode
    from trainer.verifiers.extract import ExtractMode

    assert get_args(AnswerExtractMode) == get_args(ExtractMode)
