"""A real training run on the tiny model with a rubric (rule + judge + human criteria) as reward."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.models.checkpoint import latest_checkpoint
from trainer.step.loop import train


@pytest.mark.slow
def test_a_rubric_reward_trains_and_every_rollout_carries_its_criterion_scores(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    rubric = {
        "aggregation": "rank",
        "reward_weight": 1.0,
        "judge_model": {"name_or_path": str(warm_model_dir), "max_new_tokens": 4},
        "criteria": [
            {"name": "correct", "scorer": "rule", "rule": {"type": "verifier", "params": {"name": "exact"}}},
            {
                "name": "short",
                "scorer": "rule",
                "rule": {"type": "length", "params": {"unit": "chars", "max": 2}},
            },
            {
                "name": "judged",
                "scorer": "judge",
                "scale": "range",
                "min_value": 0,
                "max_value": 999,
                "judge": {"prompt_template": "{completion}+1=", "parse_pattern": r"(\d+)"},
            },
            {"name": "tone", "scorer": "human"},
        ],
    }
    cfg = tiny_config(
        warm_model_dir,
        tmp_path,
        rubric=rubric,
        algorithm={"reward_weights": [0.0]},
        rollout={"temperature": 1.5},
    )
    sink = Steps()
    result = train(cfg, sink=sink, log=lambda m: None)
    assert result.status == "succeeded" and len(sink.reports) == 2

    for report in sink.reports:
        assert {"reward/rubric_mean", "reward/rubric/correct_mean", "reward/rubric/judged_mean"} <= set(
            report.metrics
        )
        assert "reward/rubric/tone_mean" not in report.metrics  # human criteria never enter training
        for record in report.rollouts:
            assert {"rubric", "rubric/correct", "rubric/short", "rubric/judged"} <= set(record.rewards)
            assert (
                record.details["rubric/judged"]["scorer"] == "judge"
                and "output" in record.details["rubric/judged"]
            )
            assert record.reward == pytest.approx(record.rewards["rubric"])  # the verifier's weight is 0
            assert 0.0 <= record.reward <= 1.0
    rewards = [r.reward for rep in sink.reports for r in rep.rollouts]
    assert max(rewards) > min(rewards)  # rank utilities differ within groups, so there is a gradient

    ckpt = latest_checkpoint(tmp_path)
    assert ckpt is not None
    before = AutoModelForCausalLM.from_pretrained(warm_model_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(ckpt).state_dict()
    assert any(not before[k].equal(after[k]) for k in before)
