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
    assert cfg.shaping.label_free_reward == "none" and cfg.shaping.overlong_buffer == 0
    assert cfg.shaping.length_penalty == 0 and not cfg.shaping.rarity_redistribution


def test_every_method_together_validates() -> None:
    cfg = build(
        algorithm={"importance_sampling_level": "segment", "clip_mode": "gapo", "dual_clip": True},
        shaping={"label_free_reward": "majority_vote", "overlong_buffer": 4, "length_penalty": 0.1,
                 "rarity_redistribution": True},
        data={"answer_field": None},
    )
    assert cfg.algorithm.importance_sampling_level == "segment"


def test_gapo_refuses_a_lower_bound_that_reaches_zero() -> None:
    with pytest.raises(ConfigError, match="lower gapo_max_scale or epsilon"):
        build(algorithm={"clip_mode": "gapo", "epsilon": 0.4, "gapo_max_scale": 3.0})


def test_dual_clip_c_must_exceed_one() -> None:
    with pytest.raises(ConfigError, match="dual_clip_c"):
        build(algorithm={"dual_clip": True, "dual_clip_c": 1.0})


def test_segment_level_refuses_segments_as_long_as_the_completion() -> None:
    with pytest.raises(ConfigError, match="importance_sampling_level 'sequence'"):
        build(algorithm={"importance_sampling_level": "segment", "segment_min_tokens": 16})


def test_overlong_buffer_must_be_shorter_than_the_completion_limit() -> None:
    with pytest.raises(ConfigError, match=r"overlong_buffer \(16\) must be below"):
        build(shaping={"overlong_buffer": 16})


def test_regex_cue_needs_a_valid_pattern() -> None:
    with pytest.raises(ConfigError, match="rarity_cue_pattern is empty"):
        build(shaping={"rarity_redistribution": True, "rarity_cue": "regex"})
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        build(shaping={"rarity_cue": "regex", "rarity_cue_pattern": "("})


def test_a_cue_pattern_without_the_regex_cue_is_refused() -> None:
    with pytest.raises(ConfigError, match="only used with rarity_cue 'regex'"):
        build(shaping={"rarity_cue_pattern": "x"})


def test_answer_extraction_errors_are_reported_on_the_shaping_section() -> None:
    with pytest.raises(ConfigError, match=r"shaping.answer_extract: extract='regex' needs a pattern"):
        build(shaping={"label_free_reward": "majority_vote", "answer_extract": "regex"})


def test_a_verifier_label_cannot_shadow_a_shaping_term() -> None:
    with pytest.raises(ConfigError, match="reserved for shaping terms"):
        build(verifiers=[{"name": "exact", "label": "length_penalty"}])


def test_label_free_reward_refuses_allocators_that_decide_on_verifier_rewards() -> None:
    with pytest.raises(ConfigError, match="turn dynamic_sampling off"):
        build(shaping={"label_free_reward": "majority_vote"}, budget={"dynamic_sampling": True})


def test_new_fields_are_in_the_schema_with_descriptions() -> None:
    from trainer.config import config_schema

    schema = config_schema()
    shaping = schema["$defs"]["ShapingConfig"]["properties"]
    algorithm = schema["$defs"]["AlgorithmConfig"]["properties"]
    for props, names in [(shaping, ["label_free_reward", "overlong_buffer", "rarity_cue"]),
                         (algorithm, ["clip_mode", "dual_clip_c", "segment_boundary_quantile"])]:
        for name in names:
            assert props[name]["description"]
    assert "segment" in algorithm["importance_sampling_level"]["enum"]


def test_answer_extract_modes_match_the_verifiers_extraction_modes() -> None:
    from typing import get_args

    from trainer.config import AnswerExtractMode
    from trainer.verifiers.extract import ExtractMode

    assert get_args(AnswerExtractMode) == get_args(ExtractMode)
