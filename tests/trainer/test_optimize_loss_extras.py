"""policy_update carries HISPO segments and GAPO clip scales through micro-batches without changing the result."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.config import config_from_dict
from trainer.methods.policy_losses import prepare_loss_inputs
from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams
from trainer.step.optimize import UpdateBatch, UpdateStats, policy_update


@pytest.fixture(scope="module")
def rollouts(random_model_dir: Path) -> tuple[torch.nn.Module, RolloutBatch]:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(random_model_dir)
    engine = HFRolloutEngine(model, tokenizer)
    batch = engine.generate(
        ["12+34=", "7+8=", "50+50=", "1+1="] * 2, SamplingParams(6), torch.Generator().manual_seed(0)
    )
    return model, batch


def update(
    model: torch.nn.Module, batch: RolloutBatch, micro_batch_size: int
) -> tuple[UpdateStats, dict[str, torch.Tensor]]:
    cfg = config_from_dict(
        {
            "rollout": {"max_completion_length": 6},
            "algorithm": {
                "importance_sampling_level": {
                    "name": "segment",
                    "params": {"min_tokens": 2, "boundary_quantile": 0.5},
                },
                "clip_mode": "gapo",
                "dual_clip": True,
                "epsilon": 0.1,
                "epsilon_high": 0.1,
            },
            "training": {"micro_batch_size": micro_batch_size, "max_grad_norm": 0.0},
        }
    )
    model = copy.deepcopy(model)
    mask = batch.completion_mask.float()
    advantages = torch.tensor([2.0, -1.0, 0.5, -0.5, 1.0, -2.0, 0.0, 1.5])  # [N]
    inputs = prepare_loss_inputs(advantages, advantages[:, None] * mask, batch.entropies, mask, cfg.methods())
    # Old logprobs shifted per row, so that some rows are clipped (row 0: ratio e^0.3 above GAPO's widened
    # 1 + 0.1 x 1.48) and row 1 (A < 0, ratio e^1.5 = 4.5 > c = 3) hits the dual-clip cap.
    shift = torch.tensor([-0.3, -1.5, 0.0, 0.3, -0.05, -0.2, 0.0, 0.4])[:, None]  # [N, 1]
    old = (batch.logprobs + shift) * mask
    data = UpdateBatch(batch, inputs.token_advantages, mask, old, None, inputs.extras)
    stats = policy_update(model, torch.optim.SGD(model.parameters(), lr=1.0), data, cfg)
    return stats, {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_micro_batching_does_not_change_a_segment_gapo_dual_clip_update(
    rollouts: tuple[torch.nn.Module, RolloutBatch],
) -> None:
    model, batch = rollouts
    whole, after_whole = update(model, batch, micro_batch_size=8)
    split, after_split = update(model, batch, micro_batch_size=3)
    assert 0 < whole.dual_clip_frac < whole.clip_frac < 1
    assert whole.clip_frac == pytest.approx(split.clip_frac)
    assert whole.dual_clip_frac == pytest.approx(split.dual_clip_frac)
    assert whole.pg_loss == pytest.approx(split.pg_loss, rel=1e-4, abs=1e-6)
    for name, value in after_whole.items():
        assert torch.allclose(value, after_split[name], atol=1e-5), name
    before = model.state_dict()
    assert any(not torch.equal(before[k], after_whole[k]) for k in before)
