"""The teacher section and its combinations: refused with a message that says how to fix them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from trainer.config import ExperimentConfig, config_from_dict, config_schema
from trainer.errors import ConfigError


def build(teacher: dict[str, Any] | None = None, **algorithm: Any) -> ExperimentConfig:
    return config_from_dict({"teacher": teacher or {}, "algorithm": algorithm})


def test_no_teacher_is_the_default_and_changes_nothing() -> None:
    cfg = ExperimentConfig()
    assert cfg.teacher.fusion == "none" and not cfg.teacher.enabled
    assert cfg.algorithm.loss_masks == []  # no answer-span masking either


def test_uecr_grpo_is_puu_fusion_with_ecr_credit() -> None:
    cfg = build({"name_or_path": "tiny:addition-teacher", "fusion": "puu"}, token_credit="ecr")
    assert cfg.teacher.enabled and cfg.algorithm.token_credit == "ecr"


def test_ecr_without_a_teacher_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("token_credit 'ecr' needs a teacher: set teacher.name_or_path")
    ):
        build(token_credit="ecr")


@pytest.mark.parametrize("fusion", ["opd", "additive", "modulated", "puu"])
def test_every_fusion_needs_a_teacher(fusion: str) -> None:
    with pytest.raises(ConfigError, match=f"teacher.fusion '{fusion}' needs a teacher"):
        build({"fusion": fusion})


def test_opsd_needs_no_model_path_and_refuses_one() -> None:
    assert build({"mode": "self", "fusion": "opd"}).teacher.enabled
    with pytest.raises(ConfigError, match=re.escape("remove teacher.name_or_path")):
        build({"mode": "self", "name_or_path": "x"})


def test_opsd_template_must_show_the_answer() -> None:
    with pytest.raises(ConfigError, match="must contain '\\{answer\\}'"):
        build({"mode": "self", "privileged_template": "{prompt}"})


def test_a_broken_privileged_template_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a valid format string"):
        build({"mode": "self", "privileged_template": "{answer} {solution}"})


def test_opsd_on_a_file_without_answers_is_refused() -> None:
    with pytest.raises(ConfigError, match="needs reference answers"):
        config_from_dict(
            {"data": {"source": "file", "path": "x.jsonl", "answer_field": None}, "teacher": {"mode": "self"}}
        )


def test_the_opd_then_rl_switch_needs_opd() -> None:
    with pytest.raises(ConfigError, match=re.escape("opd_until_step is a parameter of fusion 'opd', which")):
        build({"name_or_path": "t", "fusion": "additive", "opd_until_step": 5})
    with pytest.raises(
        ConfigError, match=r"teacher\.fusion\.params: teacher fusion 'additive': params\.until_step"
    ):
        build({"name_or_path": "t", "fusion": {"name": "additive", "params": {"until_step": 5}}})
    opd = {"name": "opd", "params": {"until_step": 5}}
    assert build({"name_or_path": "t", "fusion": opd}).teacher.fusion.params.until_step == 5


def test_ecr_with_pure_opd_is_refused_but_allowed_after_the_switch() -> None:
    with pytest.raises(ConfigError, match="fusion 'opd' discards"):
        build({"name_or_path": "t", "fusion": "opd"}, token_credit="ecr")
    build({"name_or_path": "t", "fusion": "opd", "opd_until_step": 3}, token_credit="ecr")


def test_a_bad_answer_span_pattern_is_refused() -> None:
    located = (
        r"algorithm\.loss_masks\.0\.params: .*params\.pattern: answer_span pattern is not a valid regular"
    )
    with pytest.raises(ConfigError, match=located):
        build(loss_masks=[{"name": "answer_span", "params": {"pattern": "(unclosed"}}])


@pytest.mark.parametrize(
    ("fusion", "param", "value"), [("modulated", "max", 1.0), ("opd", "coef", 0), ("opd", "until_step", 0)]
)
def test_out_of_range_coefficients_are_refused(fusion: str, param: str, value: float) -> None:
    with pytest.raises(
        ConfigError, match=rf"teacher\.fusion\.params: teacher fusion '{fusion}': params\.{param}: "
    ):
        build({"name_or_path": "t", "fusion": {"name": fusion, "params": {param: value}}})


def test_every_teacher_field_cites_its_paper_or_says_what_it_does() -> None:
    from trainer.config import TeacherConfig

    for name, field in TeacherConfig.model_fields.items():
        assert field.description and len(field.description) > 40, name
    fusion = config_schema()["$defs"]["TeacherConfig"]["properties"]["fusion"]
    choices = {c["name"]: c for c in fusion["x-choices"]}
    for name, choice in choices.items():
        assert choice["description"], name
        for param, prop in choice["params"].get("properties", {}).items():
            assert len(prop.get("description", "")) > 40, (name, param)
    assert "UECR-GRPO" in choices["puu"]["params"]["properties"]["coef"]["description"]


@pytest.mark.parametrize("template", ["{prompt.__class__} {answer}", "{answer} {prompt[0]}", "{answer} {0}"])
def test_a_privileged_template_may_only_name_prompt_and_answer(template: str) -> None:
    with pytest.raises(ConfigError, match="use only"):
        build({"mode": "self", "privileged_template": template})
