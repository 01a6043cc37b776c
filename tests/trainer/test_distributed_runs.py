"""Data-parallel runs on CPU (gloo, 2 processes under torchrun; issue 8 part 1): equivalence with one process,
a rank killed mid-run, and cancel. Each launch costs ~10 s of process start-up (two Python + torch imports)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.processes import live_processes
from tests.trainer.loop_helpers import tiny_config
from trainer.distributed.context import FAULT_ENV
from trainer.distributed.launch import DistributedRunError
from trainer.models.checkpoint import latest_checkpoint, list_checkpoints
from trainer.sinks import NullSink, RunInfo, StepReport
from trainer.step.loop import train

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread_per_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")


class Recorder(NullSink):
    def __init__(self) -> None:
        self.info: RunInfo | None = None
        self.steps: list[StepReport] = []
        self.checkpoints: list[int] = []
        self.ended: str | None = None
        self.errors: list[tuple[str, str]] = []

    def on_start(self, info: RunInfo) -> None:
        self.info = info

    def on_step(self, report: StepReport) -> None:
        self.steps.append(report)

    def on_checkpoint(self, step: int, path: str) -> None:
        self.checkpoints.append(step)

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self.ended = status

    def on_error(self, message: str, traceback_text: str) -> None:
        self.errors.append((message, traceback_text))


def _config(model_dir: Path, out: Path, processes: int, **training: Any) -> Any:
    """Whole rows scored (no shared-prompt forward): one process and two compare float for float, where sharing
    would add its own rounding, which Adam's division by tiny second moments magnifies in a few weights. Data
    parallel with sharing: tests/workers/test_multi_node.py (two layouts of two ranks, equal to 1e-6)."""
    return tiny_config(
        model_dir,
        out,
        rollout={"seed_per_prompt": True},
        training={
            "num_processes": processes,
            "max_steps": 3,
            "prompts_per_step": 4,
            "micro_batch_size": 8,
            "shared_prompt_forward": False,
            **training,
        },
    )


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    ckpt = latest_checkpoint(run_dir)
    assert ckpt is not None
    return load_file(ckpt / "model.safetensors")


def _rank_processes(marker: str) -> list[int]:
    """Live processes (torchrun and its ranks) whose command line mentions ``marker`` (the run's work directory)."""
    return live_processes(marker, "trainer.distributed.rank_main")


def test_two_processes_train_exactly_like_one_on_the_same_global_batch(
    random_model_dir: Path, tmp_path: Path
) -> None:
    one, two = Recorder(), Recorder()
    train(_config(random_model_dir, tmp_path / "one", 1, learning_rate=1e-2), one)
    result = train(_config(random_model_dir, tmp_path / "two", 2, learning_rate=1e-2), two)

    assert result.status == "succeeded" and result.steps_done == 3 and two.ended == "succeeded"
    assert two.info is not None and "x 2 processes" in two.info.device
    a, b = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    start = load_file(random_model_dir / "model.safetensors")
    assert max(float((a[k] - start[k]).abs().max()) for k in a) > 1e-2  # training moved the weights (lr 1e-2)
    # Equal up to float summation order (two gradient halves summed vs accumulated; Adam divides tiny
    # gradients by their own scale, so a rounding difference there moves a weight by up to ~lr x 1e-3).
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=1e-4, atol=5e-5)
    assert [s.step for s in two.steps] == [1, 2, 3]
    for s1, s2 in zip(one.steps, two.steps, strict=True):
        for key in (
            "rollout/reward_mean",
            "rollout/reward_std",
            "rollout/accuracy",
            "rollout/response_len_mean",
            "actor/pg_loss",
            "actor/grad_norm",
            "actor/entropy",
            "budget/cumulative_rollouts",
        ):
            assert s2.metrics[key] == pytest.approx(s1.metrics[key], rel=1e-5, abs=1e-7), key
        # every rank's records, in the 1-process order, with global group indices
        assert [(r.group, r.completion, r.reward) for r in s2.rollouts] == [
            (r.group, r.completion, r.reward) for r in s1.rollouts
        ]
    assert {r.group for r in two.steps[0].rollouts} == {0, 1, 2, 3}


def test_a_killed_rank_fails_the_run_cleanly_and_it_resumes_from_its_checkpoint(
    random_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    cfg = tiny_config(
        random_model_dir, out, training={"num_processes": 2, "max_steps": 3}, checkpoint={"save_steps": 1}
    )
    monkeypatch.setenv(FAULT_ENV, "1:2")  # rank 1 exits hard at the start of step 2
    sink = Recorder()
    t0 = time.monotonic()
    with pytest.raises(DistributedRunError, match="rank 1 exited with status 3") as err:
        train(cfg, sink)
    assert time.monotonic() - t0 < 90
    assert "--resume" in str(err.value) and sink.errors[0][0] == str(err.value)
    assert "torchrun exit status" in sink.errors[0][1]
    assert [s.step for s in sink.steps] == [1] and sink.ended is None
    assert _rank_processes(str(out.resolve())) == []  # no rank outlives the launcher
    assert [p.name for p in list_checkpoints(out)] == ["step-000001"]

    monkeypatch.delenv(FAULT_ENV)
    resumed = Recorder()
    result = train(cfg, resumed, resume_from=out)
    assert result.status == "succeeded" and result.steps_done == 3
    assert resumed.info is not None and resumed.info.start_step == 1
    assert [s.step for s in resumed.steps] == [2, 3]


def test_cancel_stops_every_rank_at_a_step_boundary_and_saves_a_checkpoint(
    random_model_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cfg = tiny_config(random_model_dir, out, training={"num_processes": 2, "max_steps": 500})
    sink = Recorder()
    result = train(cfg, sink, should_stop=lambda: bool(sink.steps))  # cancel once step 1 was reported

    assert result.status == "cancelled" and sink.ended == "cancelled"
    assert 1 <= result.steps_done < 500
    assert [s.step for s in sink.steps] == list(range(1, result.steps_done + 1))
    ckpt = latest_checkpoint(out)
    assert ckpt is not None and ckpt.name == f"step-{result.steps_done:06d}"
    assert sink.checkpoints == [result.steps_done]
