"""The ``budget`` config section: defaults are plain GRPO; impossible combinations fail with a fix."""

from __future__ import annotations

from typing import Any

import pytest

from trainer.config import ExperimentConfig, config_from_dict
from trainer.errors import ConfigError


def cfg(**budget: Any) -> ExperimentConfig:
    return config_from_dict({"rollout": {"num_generations": 8}, "training": {"prompts_per_step": 4}, "budget": budget})


def test_defaults_are_plain_grpo() -> None:
    b = ExperimentConfig().budget
    assert (b.allocator, b.dynamic_sampling, b.prompt_sampler) == ("fixed", False, "uniform")


def test_unknown_allocator_is_refused_with_the_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"budget\.allocator 'sarah' is unknown; valid: early_abandon, fixed, sara, vigor"):
        cfg(allocator="sarah")


def test_unknown_prompt_sampler_is_refused() -> None:
    with pytest.raises(ConfigError, match="beta_learnability, uniform"):
        cfg(prompt_sampler="lepes")


def test_early_abandon_probe_must_be_shorter_than_the_group() -> None:
    with pytest.raises(ConfigError, match=r"early_abandon_after \(8\) must be below rollout\.num_generations \(8\)"):
        cfg(allocator="early_abandon", early_abandon_after=8)


def test_vigor_budget_must_cover_the_initial_rollouts() -> None:
    with pytest.raises(ConfigError, match="vigor_rollout_budget \\(10\\) is below"):
        cfg(allocator="vigor", vigor_initial_rollouts=4, vigor_rollout_budget=10)


def test_prior_file_needs_the_beta_sampler() -> None:
    with pytest.raises(ConfigError, match="only read by prompt_sampler 'beta_learnability'"):
        cfg(prior_file="rates.json")


def test_every_budget_field_cites_its_paper_or_explains_itself() -> None:
    from trainer.config import RolloutBudgetConfig

    for name, field in RolloutBudgetConfig.model_fields.items():
        assert field.description and len(field.description) > 30, name
    papers = ("VIGOR", "SARA", "sara", "DAPO", "ThinkPrior", "DLER")
    cited = [n for n, f in RolloutBudgetConfig.model_fields.items() if any(p in (f.description or "") for p in papers)]
    assert len(cited) >= 8
