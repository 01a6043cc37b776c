"""Every teacher fusion mode, ECR and answer-span masking run through the real training loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.sinks import StepReport
from trainer.step.loop import train


def run(model_dir: Path, out: Path, teacher: dict[str, Any], **algorithm: Any) -> list[StepReport]:
    steps = Steps()
    cfg = tiny_config(model_dir, out, teacher=teacher, algorithm=algorithm)
    assert train(cfg, sink=steps, log=lambda m: None).status == "succeeded"
    return steps.reports


@pytest.mark.parametrize("fusion", ["none", "opd", "additive", "modulated", "puu"])
def test_every_fusion_mode_trains_with_an_external_teacher(
    random_model_dir: Path, tmp_path: Path, fusion: str
) -> None:
    reports = run(random_model_dir, tmp_path, {"name_or_path": str(random_model_dir), "fusion": fusion})
    for report in reports:
        assert {"teacher/gap_mean", "teacher/entropy_mean", "teacher/reverse_kl"} <= set(report.metrics)
        values = report.rollouts[0].token_values
        assert len(values["teacher_logprob"]) == len(report.rollouts[0].token_ids)
        # the teacher holds the student's initial weights: at step 1 the gap is 0 up to float noise
    assert abs(reports[0].metrics["teacher/gap_mean"]) < 1e-4


def test_opsd_with_ecr_credit_keeps_each_completions_total_credit(
    random_model_dir: Path, tmp_path: Path
) -> None:
    reports = run(random_model_dir, tmp_path, {"mode": "self", "fusion": "puu"}, token_credit="ecr")
    for record in reports[-1].rollouts:
        tokens = record.token_values["advantage"]
        in_loss = sum(record.token_values["loss_mask"])
        assert sum(tokens) == pytest.approx(record.advantage * in_loss, abs=1e-4)
        assert all(t * record.advantage >= 0 for t in tokens)


def test_answer_span_tokens_leave_the_loss(random_model_dir: Path, tmp_path: Path) -> None:
    reports = run(random_model_dir, tmp_path, {}, answer_span_mask=True, answer_span_pattern="[0-9]+")
    masked = 0
    for record in reports[-1].rollouts:  # char tokens: the last number's digits are out, other digits stay
        digits_in_loss = [
            t
            for t, kept in zip(record.tokens, record.token_values["loss_mask"], strict=True)
            if kept and t.isdigit()
        ]
        last_number_len = len(_last_number(record.completion))
        all_digits = sum(t.isdigit() for t in record.tokens)
        assert len(digits_in_loss) == all_digits - last_number_len
        masked += last_number_len
    assert masked > 0  # the step did sample numbers, so the mask was exercised


def _last_number(text: str) -> str:
    import re

    found = re.findall("[0-9]+", text)
    return found[-1] if found else ""


def test_opd_then_rl_stops_scoring_the_teacher_after_the_switch(
    random_model_dir: Path, tmp_path: Path
) -> None:
    opd = {"name": "opd", "params": {"until_step": 1}}
    reports = run(random_model_dir, tmp_path, {"name_or_path": str(random_model_dir), "fusion": opd})
    assert reports[0].metrics["teacher/fusion_active"] == 1.0
    assert "teacher/gap_mean" not in reports[1].metrics  # step 2 is RL: no teacher forward pass
    assert "teacher_logprob" not in reports[1].rollouts[0].token_values
