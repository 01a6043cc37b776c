"""reward_absence 'fail' in a data-parallel step: decided on every rank's counts, so the ranks stop together."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import torch

from tests.trainer.fork_ranks import run_forked_ranks
from trainer.config import ExperimentConfig, config_from_dict
from trainer.distributed.context import DistContext
from trainer.errors import RewardSourceError
from trainer.samples import Sample
from trainer.step.collect import step_absence
from trainer.verifiers.base import VerifierResult, absent_result
from trainer.verifiers.scoring import score_batch


class _OnRank:
    """Absent for every row on rank 0 ('rate limited'), scored on rank 1."""

    absent_on_failure = True

    def __init__(self, rank: int) -> None:
        self.rank = rank

    def __call__(self, completions: list[str], samples: list[Sample]) -> list[VerifierResult]:
        if self.rank == 0:
            return [absent_result("HTTP 429 rate limited") for _ in completions]
        return [VerifierResult(1.0, True, {}) for _ in completions]


def _config(fail_above: float) -> ExperimentConfig:
    return config_from_dict(
        {
            "verifiers": [{"name": "exact", "label": "judge"}],
            "reward_absence": {"mode": "fail", "fail_above": fail_above},
        }
    )


def _rank_main(rank: int, store: str, result_dir: str, fail_above: float) -> None:
    import torch.distributed as dist

    out = Path(result_dir) / f"rank{rank}.txt"
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
        scores = score_batch([("judge", _OnRank(rank))], [1.0], ["a"] * 4, [Sample("s", "q", "a")] * 4)
        try:
            dropped, metrics = step_absence(
                _config(fail_above), scores, 3, DistContext(rank=rank, world_size=2)
            )
            outcome = f"ok {metrics['reward/judge_absent_frac']} {sum(dropped)}"
        except RewardSourceError as err:
            outcome = f"failed: {err}"
        dist.barrier()  # both ranks are still in step: neither waits for the other in a collective
        dist.destroy_process_group()
        out.write_text(outcome)
    except BaseException:  # the parent reads what went wrong
        out.write_text(traceback.format_exc())


@pytest.mark.parametrize(("fail_above", "stops"), [(0.4, True), (0.6, False)])
def test_every_rank_decides_on_the_whole_steps_absent_fraction(
    tmp_path: Path, fail_above: float, stops: bool
) -> None:
    results = run_forked_ranks(
        _rank_main,
        lambda r: (r, str(tmp_path / "store"), str(tmp_path), fail_above),
        tmp_path,
        "a rank hung: the ranks did not decide together",
    )
    if stops:  # half the step is absent (all of rank 0's share): above 0.4 on both ranks
        assert all(
            r.startswith("failed: reward source 'judge' had no score for 50% of step 3's samples (4 of 8)")
            for r in results
        ), results
        assert all("last reason: HTTP 429 rate limited" in r for r in results)
    else:  # each rank reports its own share and drops its own absent rows
        assert results == ["ok 1.0 4", "ok 0.0 0"], results


def _advantages_rank_main(rank: int, store: str, result_dir: str, estimator: dict[str, object]) -> None:
    import torch.distributed as dist

    from trainer.methods.advantages import compute_advantages

    out = Path(result_dir) / f"rank{rank}.txt"
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
        cfg = config_from_dict({"algorithm": {"advantage_estimator": estimator}}).algorithm
        rewards = torch.tensor([1.0, 0.0, 1.0, 0.0]) * (rank + 1)
        groups = torch.tensor([0, 0, 1, 1])
        present = torch.full((4,), rank == 1)  # rank 0 dropped every sample of its share
        advantages = compute_advantages(rewards, groups, cfg, torch.tensor([2, 2, 3, 3]), present)
        dist.barrier()
        dist.destroy_process_group()
        out.write_text("ok " + " ".join(f"{float(a):.3f}" for a in advantages))
    except BaseException:
        out.write_text(traceback.format_exc())


@pytest.mark.parametrize(
    "estimator", [{"name": "grpo", "params": {"scale_rewards": "batch"}}, "reinforce_pp", "grpo"]
)
def test_a_rank_whose_every_sample_was_dropped_still_takes_part_in_batch_statistics(
    tmp_path: Path, estimator: dict[str, object]
) -> None:
    results = run_forked_ranks(
        _advantages_rank_main,
        lambda r: (r, str(tmp_path / "store"), str(tmp_path), estimator),
        tmp_path,
        "a rank hung: the rank with nothing kept skipped the step's collective statistics",
    )
    assert results[0] == "ok 0.000 0.000 0.000 0.000", results  # dropped: advantage 0
    assert results[1].startswith("ok ") and results[1] != "ok 0.000 0.000 0.000 0.000", results
