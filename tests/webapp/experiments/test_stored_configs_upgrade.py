"""Stored configs of the flat-knob shape (before methods owned their params) are rewritten by migration 0004:
a default old config becomes today's default, a chosen method keeps its knobs, an unchosen method's knobs go."""

from __future__ import annotations

import copy
from typing import Any

from trainer.config import ExperimentConfig, config_from_dict
from trainer.config.legacy import upgrade_config

# What ExperimentConfig().model_dump() gave for these sections before the change (every flat default).
OLD_DEFAULTS: dict[str, Any] = {
    "algorithm": {
        "advantage_estimator": "grpo",
        "scale_rewards": "group",
        "loss_type": "dapo",
        "importance_sampling_level": "token",
        "epsilon": 0.2,
        "epsilon_high": None,
        "beta": 0.0,
        "kl_estimator": "k3",
        "num_iterations": 1,
        "token_credit": "uniform",
        "top_entropy_quantile": 1.0,
        "mask_truncated_completions": False,
        "reward_weights": None,
        "advantage_eps": 1e-4,
        "clip_mode": "fixed",
        "gapo_max_scale": 3.0,
        "dual_clip": False,
        "dual_clip_c": 3.0,
        "segment_boundary_quantile": 0.9,
        "segment_min_tokens": 4,
        "segment_saliency_temperature": 1.0,
        "ecr_strength": 1.0,
        "ecr_min_weight": 0.1,
        "answer_span_mask": False,
        "answer_span_pattern": r"-?\d+(?:[.,/]\d+)*",
    },
    "shaping": {
        "label_free_reward": "none",
        "majority_vote_combine": "replace",
        "majority_vote_weight": 1.0,
        "answer_extract": "last_number",
        "answer_pattern": None,
        "answer_tag": "answer",
        "overlong_buffer": 0,
        "overlong_penalty_factor": 1.0,
        "length_penalty": 0.0,
        "rarity_redistribution": False,
        "rarity_cue": "answer_form",
        "rarity_cue_pattern": None,
        "rarity_strength": 1.0,
    },
    "budget": {
        "allocator": "fixed",
        "dynamic_sampling": False,
        "max_generation_rounds": 3,
        "vigor_initial_rollouts": 4,
        "vigor_rollout_budget": None,
        "vigor_increment": 2,
        "vigor_rounds": 2,
        "sara_probe": 2,
        "sara_step": 2,
        "sara_abandon_below": 0.2,
        "sara_commit_above": 0.8,
        "early_abandon_after": 4,
        "prompt_sampler": "uniform",
        "prior_file": None,
        "prior_strength": 8.0,
        "thompson": True,
    },
    "teacher": {
        "name_or_path": None,
        "mode": "external",
        "privileged_template": "Reference answer: {answer}\n{prompt}",
        "fusion": "none",
        "opd_coef": 1.0,
        "opd_until_step": None,
        "additive_coef": 0.1,
        "modulation_strength": 1.0,
        "modulation_max": 2.0,
        "puu_coef": 0.1,
    },
}


def test_an_old_default_config_becomes_todays_default() -> None:
    upgraded = config_from_dict(upgrade_config(copy.deepcopy(OLD_DEFAULTS)))
    assert upgraded.model_dump(mode="json") == ExperimentConfig().model_dump(mode="json")


def test_chosen_methods_keep_their_knobs_and_unchosen_ones_are_dropped() -> None:
    old = copy.deepcopy(OLD_DEFAULTS)
    old["algorithm"].update(clip_mode="gapo", gapo_max_scale=2.0, ecr_strength=7.0, answer_span_mask=True)
    old["shaping"].update(overlong_buffer=4, length_penalty=0.5, label_free_reward="majority_vote")
    old["budget"].update(prompt_sampler="beta_learnability", prior_strength=4.0, sara_probe=9)
    old["teacher"].update(name_or_path="tiny:addition-teacher", fusion="opd", opd_until_step=5, puu_coef=0.9)
    config = config_from_dict(upgrade_config(old))
    assert config.algorithm.clip_mode.params.max_scale == 2.0
    assert config.algorithm.token_credit == "uniform"  # ecr_strength 7 had no effect: dropped
    assert [m.name for m in config.algorithm.loss_masks] == ["answer_span"]
    assert [m.name for m in config.shaping.reward_shaping] == [
        "majority_vote",
        "overlong_penalty",
        "length_penalty",
    ]
    assert (
        config.shaping.reward_shaping[1].params.buffer == 4
        and config.shaping.reward_shaping[2].params.coef == 0.5
    )
    assert config.budget.prompt_sampler.params.prior_strength == 4.0
    assert config.budget.allocator == "fixed"  # sara_probe 9 had no effect: dropped
    assert config.teacher.fusion.params.until_step == 5


def test_the_same_old_config_from_a_file_is_refused_where_a_knob_would_be_lost() -> None:
    """Files are read strictly: a non-default knob of an unchosen method is an error naming the fix."""
    import pytest

    from trainer.errors import ConfigError

    old = copy.deepcopy(OLD_DEFAULTS)
    old["budget"]["sara_probe"] = 9
    with pytest.raises(ConfigError, match="sara_probe is a parameter of allocator 'sara'"):
        config_from_dict(old)
