"""A real run on the warm tiny model: segment-level IS (HISPO) + majority-vote reward, no reference answers used."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.models.checkpoint import latest_checkpoint
from trainer.step.loop import train


@pytest.mark.slow
def test_segment_is_with_majority_vote_reward_trains_the_tiny_model(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    cfg = tiny_config(
        warm_model_dir,
        tmp_path,
        rollout={"num_generations": 8, "max_completion_length": 5, "temperature": 1.5},
        verifiers=[{"name": "exact", "params": {"extract": "first_line"}}],
        algorithm={
            "importance_sampling_level": "segment",
            "segment_min_tokens": 1,
            "segment_boundary_quantile": 0.5,
            "num_iterations": 2,
            "dual_clip": True,
        },
        shaping={"label_free_reward": "majority_vote", "majority_vote_combine": "replace"},
        training={"max_steps": 3, "prompts_per_step": 2, "learning_rate": 1e-3},
    )
    steps = Steps()
    result = train(cfg, sink=steps, log=lambda m: None)
    assert result.status == "succeeded" and len(steps.reports) == 3
    for report in steps.reports:
        m = report.metrics
        assert 0 < m["label_free/majority_agreement"] <= 1
        assert m["rollout/reward_mean"] == pytest.approx(
            m["reward/majority_vote_mean"]
        )  # the vote replaced exact
        assert "label_free/majority_correct" in m and "rollout/accuracy" in m  # real accuracy still measured
        assert m["segment/count_mean"] >= 1 and math.isfinite(m["actor/loss"])
        assert 0 <= m["actor/clip_frac"] <= 1 and 0 <= m["actor/dual_clip_frac"] <= m["actor/clip_frac"]
        for record in report.rollouts:
            assert record.reward == record.rewards["majority_vote"]
            segments = record.token_values["segment"]
            assert len(segments) == len(record.token_ids) and segments[0] == 0.0
            assert all(b - a in (0.0, 1.0) for a, b in itertools.pairwise(segments))
    assert any(r.token_values["segment"][-1] > 0 for s in steps.reports for r in s.rollouts)
    checkpoint = latest_checkpoint(tmp_path)
    assert checkpoint is not None
    before = AutoModelForCausalLM.from_pretrained(warm_model_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(checkpoint).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_gapo_rarity_and_length_shaping_run_through_the_loop(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_config(
        random_model_dir,
        tmp_path,
        algorithm={"clip_mode": "gapo", "num_iterations": 2},
        shaping={
            "overlong_buffer": 2,
            "length_penalty": 0.1,
            "rarity_redistribution": True,
            "rarity_cue": "completion",
        },
        training={"max_steps": 1},
    )
    steps = Steps()
    train(cfg, sink=steps, log=lambda m: None)
    m, records = steps.reports[0].metrics, steps.reports[0].rollouts
    assert {
        "actor/gapo_scale_max",
        "rarity/clusters_mean",
        "shaping/overlong_penalty_mean",
        "shaping/length_penalty_mean",
    } <= set(m)
    assert m["actor/gapo_scale_max"] >= 1 and m["shaping/length_penalty_mean"] < 0
    for r in records:  # the rollout's reward is the shaped total and its breakdown shows each term
        shaped = r.rewards["regex_format"] + r.rewards["overlong_penalty"] + r.rewards["length_penalty"]
        assert r.reward == pytest.approx(shaped)
        assert r.rewards["length_penalty"] == pytest.approx(-0.1 * len(r.token_ids) / 4)
    assert "segment" not in records[0].token_values  # token-level IS records no segments
