"""The ``rubric`` config section: defaults, and validation errors that say how to fix them."""

from __future__ import annotations

from typing import Any

import pytest

from trainer.config import config_from_dict
from trainer.errors import ConfigError

RULE = {"name": "digits", "scorer": "rule", "rule": {"type": "regex", "params": {"pattern": "[0-9]"}}}


def rubric(**section: Any) -> dict[str, Any]:
    return {"rubric": {"criteria": [RULE], **section}}


def test_no_rubric_by_default() -> None:
    assert config_from_dict({}).rubric is None


def test_a_rubric_section_validates_and_fills_defaults() -> None:
    judged = {"name": "judged", "scorer": "judge", "scale": "likert5"}
    cfg = config_from_dict(rubric(criteria=[RULE, judged], judge_model={"name_or_path": "tiny:addition"}))
    assert cfg.rubric is not None
    assert cfg.rubric.aggregation == "weighted_sum" and cfg.rubric.reward_weight == 1.0
    judged = cfg.rubric.criteria[1]
    assert judged.judge is not None and "{completion}" in judged.judge.prompt_template
    assert judged.bounds == (1.0, 5.0)


def test_the_section_round_trips_through_json() -> None:
    cfg = config_from_dict(rubric(aggregation="rank"))
    assert config_from_dict(cfg.model_dump(mode="json")) == cfg


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"aggregation": "median"}, "rubric.aggregation 'median' is unknown; valid: rank, weighted_sum"),
        ({"criteria": [RULE, RULE]}, "criteria names must be unique; repeated: ['digits']"),
        ({"criteria": [{"name": "h", "scorer": "human"}]}, "has no rule or judge criterion"),
        ({"criteria": [{**RULE, "weight": 0}]}, "all have weight 0"),
        ({"criteria": [{"name": "r", "scorer": "rule"}]}, "has no 'rule': set rule.type"),
        (
            {"criteria": [{**RULE, "scale": "range", "min_value": 3, "max_value": 3}]},
            "max_value (3.0) must be greater",
        ),
        ({"criteria": [{**RULE, "rule": {"type": "regexp"}}]}, "unknown rubric rule 'regexp'"),
        ({"criteria": [{**RULE, "rule": {"type": "length", "params": {}}}]}, "give min, max or both"),
        ({"criteria": [{**RULE, "scale": "stars"}]}, "rubric.criteria.0.scale"),
        ({"reward_weight": -1}, "rubric.reward_weight"),
    ],
)
def test_invalid_rubrics_are_refused_with_a_fix(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict(rubric(**section))
    assert message in str(err.value)


def test_a_verifier_label_may_not_clash_with_rubric_keys() -> None:
    with pytest.raises(ConfigError, match="clash with the rubric's reward keys"):
        config_from_dict({**rubric(), "verifiers": [{"name": "exact", "label": "rubric"}]})


def test_trained_criteria_leave_out_human_ones() -> None:
    cfg = config_from_dict(rubric(criteria=[RULE, {"name": "h", "scorer": "human"}]))
    assert cfg.rubric is not None and [c.name for c in cfg.rubric.trained_criteria] == ["digits"]


def test_the_section_imports_no_torch() -> None:
    import subprocess
    import sys

    code = "import sys, trainer.config, trainer.rubrics.rules, trainer.rubrics.aggregators; print('torch' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )


@pytest.mark.parametrize(
    "source",
    [
        {"name": "judge", "params": {"base_url": "http://judge.example:8000/v1", "model": "m"}},
        {"name": "reward_model", "params": {"model": "tiny:chain"}},
    ],
)
def test_a_reward_source_is_refused_as_a_rubric_rule(source: dict[str, Any]) -> None:
    """A model or an endpoint inside a rubric criterion would escape the checks the web app applies to the
    config's reward sources (the judge allow-list, the model folders): it is listed under verifiers instead."""
    criterion = {"name": "graded", "rule": {"type": "verifier", "params": source}}
    with pytest.raises(ConfigError, match=r"is a reward source .* list it under 'verifiers'"):
        config_from_dict({"rubric": {"criteria": [criterion]}})
