"""The local rubric judge no longer defaults to a model (it used to be the policy's own tiny model)."""

from __future__ import annotations

import pytest

from trainer.config import config_from_dict
from trainer.errors import ConfigError
from trainer.rubrics.config import JudgeModelConfig
from trainer.rubrics.judge import load_judge

JUDGED = {"name": "clarity", "scorer": "judge", "scale": "likert5"}
RULE = {"name": "digits", "scorer": "rule", "rule": {"type": "regex", "params": {"pattern": "[0-9]"}}}


def test_a_judged_criterion_without_a_judge_model_is_refused_saying_what_to_do() -> None:
    with pytest.raises(ConfigError) as refused:
        config_from_dict({"rubric": {"criteria": [RULE, JUDGED]}})
    message = str(refused.value)
    assert (
        "rubric criteria ['clarity'] are scored by a judge but rubric.judge_model.name_or_path is not set"
        in message
    )
    assert "name a local judge model" in message and "'judge' reward source" in message


def test_a_named_judge_model_is_accepted() -> None:
    cfg = config_from_dict({"rubric": {"criteria": [JUDGED], "judge_model": {"name_or_path": "tiny:chain"}}})
    assert cfg.rubric is not None and cfg.rubric.judge_model.name_or_path == "tiny:chain"


def test_a_rubric_of_rules_needs_no_judge_model() -> None:
    cfg = config_from_dict({"rubric": {"criteria": [RULE]}})
    assert cfg.rubric is not None and cfg.rubric.judge_model.name_or_path is None


def test_the_schema_has_no_default_judge() -> None:
    assert JudgeModelConfig.model_json_schema()["properties"]["name_or_path"]["default"] is None


def test_loading_a_judge_without_a_model_says_what_to_set() -> None:
    import torch

    with pytest.raises(ConfigError, match=r"rubric\.judge_model\.name_or_path is not set"):
        load_judge(JudgeModelConfig(), "float32", torch.device("cpu"))
