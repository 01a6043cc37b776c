"""perf/elapsed_s and perf/tokens_total (trainer/step/progress.py): the x-axes "wall-clock" and "tokens" of the
run page. Hand-computed totals with a fake clock, the per-step token count they sum, how ranks combine it,
and one tiny run resumed from its checkpoint whose totals carry on where they stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import ExperimentConfig
from trainer.distributed.context import combine_metrics
from trainer.models.checkpoint import TrainerState, latest_checkpoint, load_state
from trainer.rollout import RolloutBatch
from trainer.step.loop import train
from trainer.step.optimize import UpdateStats
from trainer.step.progress import ELAPSED_KEY, STEP_TOKENS_KEY, TOKENS_KEY, RunProgress
from trainer.step.reporting import step_metrics
from trainer.step.state import StepTimings
from trainer.verifiers.scoring import ScoreBatch


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_totals_add_up_step_by_step() -> None:
    clock = FakeClock()
    progress = RunProgress(clock=clock)
    progress.start()
    steps = []
    for seconds, tokens in ((2.0, 30.0), (3.5, 12.0)):
        clock.now += seconds
        metrics = {STEP_TOKENS_KEY: tokens}
        progress.record(metrics)
        steps.append((metrics[ELAPSED_KEY], metrics[TOKENS_KEY]))
    assert steps == [(2.0, 30.0), (5.5, 42.0)]
    assert progress.state() == {"elapsed_s": 5.5, "tokens_total": 42.0}


def test_a_resumed_run_continues_from_its_checkpoints_totals_and_an_old_checkpoint_starts_at_zero() -> None:
    clock = FakeClock()
    progress = RunProgress.resumed({"elapsed_s": 60.0, "tokens_total": 500.0}, clock=clock)
    progress.start()
    clock.now += 4.0
    metrics = {STEP_TOKENS_KEY: 25.0}
    progress.record(metrics)
    assert (metrics[ELAPSED_KEY], metrics[TOKENS_KEY]) == (64.0, 525.0)
    assert RunProgress.resumed(None).state() == {"elapsed_s": 0.0, "tokens_total": 0.0}


def test_a_step_without_a_token_count_or_with_nan_keeps_the_total() -> None:
    progress = RunProgress(tokens_total=10.0, clock=FakeClock())
    for metrics in ({}, {STEP_TOKENS_KEY: float("nan")}):
        progress.record(metrics)
        assert metrics[TOKENS_KEY] == 10.0


def test_a_checkpoint_state_written_before_the_totals_existed_still_loads() -> None:
    old: dict[str, Any] = {
        "step": 3,
        "optimizer": {},
        "scheduler": {},
        "sampler": {},
        "rng": {},
        "config": {},
        "base_model_path": "m",
    }
    assert TrainerState(**old).progress is None


def test_the_step_tokens_are_prompt_and_completion_tokens_once_whatever_the_passes() -> None:
    batch = RolloutBatch(
        prompt_ids=torch.zeros(2, 3, dtype=torch.long), prompt_mask=torch.tensor([[0, 1, 1], [1, 1, 1]]),  # 5
        completion_ids=torch.zeros(2, 4, dtype=torch.long), completion_mask=torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]]),  # 6
        logprobs=torch.zeros(2, 4), entropies=torch.zeros(2, 4), finish_reasons=["eos", "length"], texts=["a", "b"],
    )  # fmt: skip
    update = UpdateStats(
        loss=0.1, pg_loss=0.1, kl=0.0, entropy=1.0, clip_frac=0.0, grad_norm=1.0, logprobs=torch.zeros(2, 4)
    )
    scores = ScoreBatch(total=[1.0, 0.0], per_verifier={}, correct=[True, False], details=[{}, {}])
    metrics = step_metrics(
        ExperimentConfig(),
        batch,
        scores,
        torch.tensor([1.0, 0.0]),
        torch.tensor([0.7, -0.7]),
        torch.tensor([0, 0]),
        [update, update],
        timings=StepTimings(gen_s=1.0, verify_s=0.5, train_s=2.0),
        lr=1e-4,
    )
    assert metrics[STEP_TOKENS_KEY] == 11.0
    assert metrics["perf/train_tokens_per_s"] == pytest.approx(
        2 * 11.0 / 2.0
    )  # two passes over the same tokens


def test_ranks_step_tokens_are_summed_into_the_steps() -> None:
    parts = [
        ({STEP_TOKENS_KEY: 40.0, "perf/step_s": 1.0}, 4),
        ({STEP_TOKENS_KEY: 24.0, "perf/step_s": 2.0}, 4),
    ]
    combined = combine_metrics(parts)
    assert combined[STEP_TOKENS_KEY] == 64.0 and combined["perf/step_s"] == 2.0


def test_a_resumed_run_carries_both_totals_on_from_its_checkpoint(
    random_model_dir: Path, tmp_path: Path
) -> None:
    first, second = Steps(), Steps()
    train(tiny_config(random_model_dir, tmp_path, training={"max_steps": 2}), sink=first, log=lambda m: None)
    saved = load_state(latest_checkpoint(tmp_path)).progress  # type: ignore[arg-type]
    train(
        tiny_config(random_model_dir, tmp_path, training={"max_steps": 3}),
        sink=second,
        resume_from=tmp_path,
        log=lambda m: None,
    )

    reports = first.reports + second.reports
    assert [r.step for r in reports] == [1, 2, 3]
    tokens = [r.metrics[TOKENS_KEY] for r in reports]
    step_tokens = [r.metrics[STEP_TOKENS_KEY] for r in reports]
    assert tokens == pytest.approx([step_tokens[0], sum(step_tokens[:2]), sum(step_tokens)])
    elapsed = [r.metrics[ELAPSED_KEY] for r in reports]
    assert saved is not None and saved["tokens_total"] == tokens[1]
    assert (
        0 < elapsed[0] < elapsed[1] <= saved["elapsed_s"] < elapsed[2]
    )  # step 3 counts on from the checkpoint
