"""Step credit in real training steps (trainer/step/stages.py ``assign_token_credit``): the chain teacher model
writes scratchpads on chain arithmetic, the oracle scores each line, and the ``step_credit`` hook adds process
credit on top of the outcome's token advantages, or PROF's filter takes rows out of the loss mask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.trainer.loop_helpers import tiny_config
from trainer.methods.step_credit import prof_keep
from trainer.models.tiny_model import ensure_tiny_model
from trainer.step import stages
from trainer.step.run_setup import Run, build_run
from trainer.step.step import training_step


@pytest.fixture(scope="module")
def chain_model_dir() -> Path:
    """The built-in chain teacher: it writes the scratchpad, so completions have several steps."""
    return ensure_tiny_model("tiny:chain-teacher", log=lambda m: None)


def chain_run(model_dir: Path, out_dir: Path, process_reward: dict[str, Any]) -> Run:
    sections: dict[str, Any] = {
        "data": {"source": "chain_arithmetic", "task": "mixed", "size": 64},
        "verifiers": [{"name": "chain_arithmetic"}],
        "rollout": {"num_generations": 8, "max_completion_length": 96},
        "process_reward": process_reward,
    }
    config = tiny_config(model_dir, out_dir, **sections)
    return build_run(config, log=lambda m: None)


def one_step(run: Run) -> dict[str, Any]:
    """The stages up to token credit, with and without the step scores."""
    collected = stages.collect(run, 1)
    scored = stages.score_with_policy(run, 1, collected)
    steps = stages.score_steps(run, 1, collected, scored)
    shaped = stages.shape_rewards(run, 1, collected)
    advantages = stages.estimate_advantages(run, 1, collected, scored, shaped, None)
    outcome_mask = stages.build_loss_mask(run, 1, collected, scored)
    outcome = stages.assign_token_credit(run, 1, scored, advantages, outcome_mask, None)
    mask = stages.build_loss_mask(run, 1, collected, scored)
    before = mask.mask.clone()
    credit = stages.assign_token_credit(
        run, 1, scored, advantages, mask, None, steps=steps, shaped=shaped, collected=collected
    )
    return {
        "steps": steps,
        "collected": collected,
        "shaped": shaped,
        "outcome": outcome,
        "credit": credit,
        "mask_before": before,
        "mask": mask.mask,
    }


def test_sum_credit_adds_one_value_per_step_that_sums_to_zero_over_each_groups_tokens(
    chain_model_dir: Path, tmp_path: Path
) -> None:
    got = one_step(chain_run(chain_model_dir, tmp_path, {"credit": "sum"}))
    steps, mask = got["steps"], got["mask"]
    added = got["credit"].token_advantages - got["outcome"].token_advantages  # [N, T]
    assert torch.equal(mask, got["mask_before"])  # blending leaves the loss mask alone
    assert added.abs().sum() > 0
    for row, (spans, scores) in enumerate(zip(steps.spans, steps.scores, strict=True)):
        for (start, end), score in zip(spans, scores, strict=True):
            in_loss = added[row, start:end][mask[row, start:end].bool()]
            if score != score:  # nan: absent, no credit
                assert in_loss.abs().sum() == 0
            elif in_loss.numel():
                assert torch.allclose(in_loss, in_loss[0].expand_as(in_loss))  # one value per step
    groups = got["collected"].group_ids
    for group in groups.unique():
        assert added[groups == group].sum().abs() < 1e-3  # group-normalised over tokens
    assert got["credit"].metrics["process/credit_token_frac"] > 0


def test_prof_filter_takes_the_unkept_rows_out_of_the_loss_mask(
    chain_model_dir: Path, tmp_path: Path
) -> None:
    got = one_step(
        chain_run(chain_model_dir, tmp_path, {"credit": "sum", "prof_filter": {"keep_fraction": 0.5}})
    )
    keep = prof_keep(
        got["steps"].scores, got["shaped"].pseudo_correct, got["collected"].group_ids.tolist(), 0.5
    )
    assert sum(keep) == 8  # 4 of each group of 8
    for row, kept in enumerate(keep):
        assert torch.equal(
            got["mask"][row], got["mask_before"][row] if kept else torch.zeros_like(got["mask"][row])
        )
        expected = got["outcome"].token_advantages[row] * kept  # outcome-only advantages, no blend
        assert torch.equal(got["credit"].token_advantages[row], expected)
    assert got["credit"].metrics["process/prof_kept_frac"] == 0.5


def test_a_two_step_run_with_pure_min_form_credit_trains(chain_model_dir: Path, tmp_path: Path) -> None:
    run = chain_run(chain_model_dir, tmp_path, {"credit": "min"})
    start = [p.detach().clone() for p in run.model.parameters()]
    reports = [training_step(run, step) for step in (1, 2)]
    assert all("process/credit_token_frac" in r.metrics for r in reports)
    assert any(not torch.equal(a, b) for a, b in zip(start, run.model.parameters(), strict=True))
