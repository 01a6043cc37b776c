"""The update leaves silent rows (every loss token's advantage 0) out of its forward and backward, and the step is
the same as when it runs them: the same weights after the optimizer (AdamW, weight decay included), the same
loss, clip fraction, entropy and logprobs."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.config import config_from_dict
from trainer.methods.policy_losses import prepare_loss_inputs
from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams
from trainer.step.optimize import UpdateBatch, UpdateStats, policy_update, rows_with_gradient

PROMPTS = ["12+34=", "7+8=", "50+50=", "1+1="]


@pytest.fixture(scope="module")
def rollouts(random_model_dir: Path) -> tuple[torch.nn.Module, RolloutBatch]:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(random_model_dir)
    batch = HFRolloutEngine(model, tokenizer).generate(
        [p for p in PROMPTS for _ in range(3)], SamplingParams(6), torch.Generator().manual_seed(0)
    )  # four groups of three
    return model, batch


def _config(algorithm: dict[str, Any], skip: bool, micro_batch_size: int = 5) -> Any:
    return config_from_dict(
        {
            "rollout": {"max_completion_length": 6},
            "algorithm": {"epsilon": 0.1, "epsilon_high": 0.1, **algorithm},
            "training": {
                "micro_batch_size": micro_batch_size,
                "max_grad_norm": 1.0,
                "skip_silent_rows": skip,
            },
        }
    )


def _update(
    model: torch.nn.Module,
    batch: RolloutBatch,
    advantages: torch.Tensor,
    cfg: Any,
    passes: int = 2,
    adam: bool = False,
) -> tuple[list[UpdateStats], dict[str, torch.Tensor]]:
    """``passes`` updates of a copy of ``model`` (SGD with momentum, or AdamW; weight decay on), the second
    against the first's old logprobs, as num_iterations 2 runs. SGD keeps the weights linear in the gradients:
    AdamW divides each by its own running scale, which turns rounding noise in a gradient that is 0 in exact
    arithmetic (the key projection's bias under softmax) into a step of the full learning rate."""
    model = copy.deepcopy(model)
    mask = batch.completion_mask.float()
    inputs = prepare_loss_inputs(advantages, advantages[:, None] * mask, batch.entropies, mask, cfg.methods())
    optimizer = (
        torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        if adam
        else torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=0.1)
    )
    data = UpdateBatch(batch, inputs.token_advantages, mask, None, None, inputs.extras)
    stats = [policy_update(model, optimizer, data, cfg)]
    data.old_logprobs = stats[0].logprobs
    stats += [policy_update(model, optimizer, data, cfg) for _ in range(passes - 1)]
    return stats, {k: v.detach().clone() for k, v in model.state_dict().items()}


ALGORITHMS = {
    "token-dapo": {"importance_sampling_level": "token", "loss_type": "dapo"},
    "sequence-grpo": {"importance_sampling_level": "sequence", "loss_type": "grpo"},
    "segment-gapo-dual-clip-dr_grpo": {
        "importance_sampling_level": {
            "name": "segment",
            "params": {"min_tokens": 2, "boundary_quantile": 0.5},
        },
        "clip_mode": "gapo",
        "dual_clip": True,
        "loss_type": "dr_grpo",
    },
}
# Groups 0 and 2 are silent (all three completions scored alike), groups 1 and 3 are not.
ADVANTAGES = torch.tensor([0.0, 0.0, 0.0, 1.2, -0.6, -0.6, 0.0, 0.0, 0.0, -1.0, 2.0, -1.0])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_leaving_silent_rows_out_changes_nothing_in_the_step(
    rollouts: tuple[torch.nn.Module, RolloutBatch], name: str
) -> None:
    model, batch = rollouts
    full, after_full = _update(model, batch, ADVANTAGES, _config(ALGORITHMS[name], skip=False))
    skipped, after_skipped = _update(model, batch, ADVANTAGES, _config(ALGORITHMS[name], skip=True))
    assert [s.silent_rows for s in full] == [0, 0]
    assert [s.silent_rows for s in skipped] == [6, 6]
    mask = batch.completion_mask.bool()
    for a, b in zip(full, skipped, strict=True):
        assert b.loss == pytest.approx(a.loss, rel=1e-4, abs=1e-7)
        assert b.pg_loss == pytest.approx(a.pg_loss, rel=1e-4, abs=1e-7)
        assert b.clip_frac == pytest.approx(a.clip_frac)
        assert b.dual_clip_frac == pytest.approx(a.dual_clip_frac)
        assert b.grad_norm == pytest.approx(a.grad_norm, rel=1e-4)
    # the first pass's entropy and logprobs (what the step reports): the skipped rows' come from the batch
    assert skipped[0].entropy == pytest.approx(full[0].entropy, rel=1e-4)
    assert torch.allclose(skipped[0].logprobs[mask], full[0].logprobs[mask], atol=1e-4)
    assert full[1].clip_frac > 0  # the second pass moved away from the old policy far enough to clip
    for key, value in after_full.items():
        assert torch.allclose(after_skipped[key], value, atol=1e-6), key
    assert any(not torch.equal(model.state_dict()[k], after_full[k]) for k in after_full)


def test_a_step_of_silent_groups_only_still_steps_the_optimizer(
    rollouts: tuple[torch.nn.Module, RolloutBatch],
) -> None:
    model, batch = rollouts
    zeros = torch.zeros(len(batch))
    full, after_full = _update(model, batch, zeros, _config({}, skip=False), passes=1, adam=True)
    skipped, after_skipped = _update(model, batch, zeros, _config({}, skip=True), passes=1, adam=True)
    # one row still runs, so that every parameter gets its zero gradient
    assert skipped[0].silent_rows == len(batch) - 1
    assert full[0].grad_norm == skipped[0].grad_norm == 0.0
    for key, value in after_full.items():
        assert torch.equal(after_skipped[key], value), key  # weight decay moved them alike
    assert any(not torch.equal(model.state_dict()[k], after_full[k]) for k in after_full)


def _data(batch: RolloutBatch, advantages: torch.Tensor, ref: bool = False) -> UpdateBatch:
    mask = batch.completion_mask.float()
    return UpdateBatch(batch, advantages[:, None] * mask, mask, None, batch.logprobs if ref else None)


def test_which_rows_run(rollouts: tuple[torch.nn.Module, RolloutBatch]) -> None:
    _, batch = rollouts
    cfg = _config({}, skip=True)
    kept = rows_with_gradient(_data(batch, ADVANTAGES), cfg)
    assert kept is not None and kept.tolist() == [3, 4, 5, 9, 10, 11]
    assert rows_with_gradient(_data(batch, torch.ones(len(batch))), cfg) is None  # nothing to leave out
    nan = ADVANTAGES.clone()
    nan[0] = math.nan
    kept = rows_with_gradient(_data(batch, nan), cfg)
    assert kept is not None and 0 in kept.tolist()  # a NaN must reach the loss (the update then stops)
    # a token outside the loss mask does not make its row live
    data = _data(batch, ADVANTAGES)
    data.advantages[0, :] = 1.0
    data.loss_mask[0, :] = 0.0
    assert rows_with_gradient(data, cfg).tolist() == [3, 4, 5, 9, 10, 11]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "why",
    ["switched off", "a KL term", "bnpo's per-micro-batch mean"],
)
def test_every_row_runs_where_a_silent_row_still_counts(
    rollouts: tuple[torch.nn.Module, RolloutBatch], why: str
) -> None:
    _, batch = rollouts
    cfg = {
        "switched off": _config({}, skip=False),
        "a KL term": _config({"beta": 0.04}, skip=True),
        "bnpo's per-micro-batch mean": _config({"loss_type": "bnpo"}, skip=True),
    }[why]
    assert rows_with_gradient(_data(batch, ADVANTAGES, ref=why == "a KL term"), cfg) is None
