"""The ``budget`` config section: defaults are plain GRPO; impossible combinations fail with a fix."""

from __future__ import annotations

from typing import Any

import pytest

from trainer.config import ExperimentConfig, config_from_dict
from trainer.errors import ConfigError


def cfg(**budget: Any) -> ExperimentConfig:
    return config_from_dict(
        {"rollout": {"num_generations": 8}, "training": {"prompts_per_step": 4}, "budget": budget}
    )


def test_defaults_are_plain_grpo() -> None:
    b = ExperimentConfig().budget
    assert (b.allocator, b.dynamic_sampling, b.prompt_sampler) == ("fixed", False, "uniform")


def test_unknown_allocator_is_refused_with_the_valid_names() -> None:
    valid = r"budget\.allocator\.name: unknown rollout allocator 'sarah'; valid names are: early_abandon, fixed, sara, vigor"
    with pytest.raises(ConfigError, match=valid):
        cfg(allocator="sarah")


def test_unknown_prompt_sampler_is_refused() -> None:
    with pytest.raises(
        ConfigError,
        match=r"budget\.prompt_sampler\.name: unknown prompt sampler 'lepes'; valid names are: beta_learnability, uniform",
    ):
        cfg(prompt_sampler="lepes")


def test_early_abandon_probe_must_be_shorter_than_the_group() -> None:
    with pytest.raises(
        ConfigError, match=r"'early_abandon': after \(8\) must be below rollout\.num_generations \(8\)"
    ):
        cfg(allocator={"name": "early_abandon", "params": {"after": 8}})


def test_vigor_budget_must_cover_the_initial_rollouts() -> None:
    with pytest.raises(ConfigError, match=r"'vigor': rollout_budget \(10\) is below"):
        cfg(allocator={"name": "vigor", "params": {"initial_rollouts": 4, "rollout_budget": 10}})


def test_prior_file_needs_the_beta_sampler() -> None:
    with pytest.raises(
        ConfigError, match="prior_file is a parameter of prompt_sampler 'beta_learnability', which"
    ):
        cfg(prior_file="rates.json")
    with pytest.raises(ConfigError, match=r"budget\.prompt_sampler\.params: .*'uniform': params\.prior_file"):
        cfg(prompt_sampler={"name": "uniform", "params": {"prior_file": "rates.json"}})


def budget_help_texts() -> dict[str, str]:
    """Every help text of the budget section: its fields, and each method's description and params (x-choices)."""
    from trainer.config import config_schema

    texts: dict[str, str] = {}
    for name, prop in config_schema()["$defs"]["RolloutBudgetConfig"]["properties"].items():
        texts[name] = prop.get("description", "")
        for choice in prop.get("x-choices", []):
            texts[f"{name} {choice['name']}"] = choice["description"]
            for param, schema in choice["params"].get("properties", {}).items():
                texts[f"{name} {choice['name']} {param}"] = schema.get("description", "")
    return texts


def test_every_budget_field_cites_its_paper_or_explains_itself() -> None:
    texts = budget_help_texts()
    for name, text in texts.items():
        assert text and len(text) > 30, name
    papers = ("VIGOR", "SARA", "sara", "DAPO", "ThinkPrior", "DLER")
    cited = [n for n, text in texts.items() if any(p in text for p in papers)]
    assert len(cited) >= 8, cited
    for method in (
        "allocator early_abandon",
        "allocator sara",
        "allocator vigor",
        "prompt_sampler beta_learnability",
    ):
        assert method in cited, method
