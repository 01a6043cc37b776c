"""FSDP runs on CPU (gloo, 2 processes under torchrun; trainer/distributed/fsdp.py): the same update as one process, and
checkpoints in the plain format that resume across fsdp and plain runs in both directions.

One test, two launches (~10 s of process start-up each) and two 1-process runs: every check shares them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_helpers import tiny_config
from tests.trainer.test_distributed_runs import Recorder
from trainer.models.checkpoint import STATE_FILE, list_checkpoints
from trainer.step.loop import train

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread_per_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")


def _config(model_dir: Path, out: Path, processes: int, fsdp: bool) -> Any:
    """3 steps, checkpoints at steps 2 and 3; beta > 0, so the (sharded) KL reference takes part. Every run
    plans its micro-batches from a memory budget (trainer/models/memory.py; an fsdp run probes the sharded model on
    every rank and takes the smallest size); it is generous, so the plan keeps the configured 8. Whole rows are
    scored in both layouts (a sharded model always scores them), so they compare float for float."""
    return tiny_config(
        model_dir,
        out,
        rollout={"seed_per_prompt": True},
        algorithm={"beta": 0.04},
        training={
            "num_processes": processes,
            "fsdp": fsdp,
            "max_steps": 3,
            "prompts_per_step": 4,
            "micro_batch_size": 8,
            "learning_rate": 1e-2,
            "memory_budget_gb": 4.0,
            "shared_prompt_forward": False,
        },
        checkpoint={"save_steps": 2},
    )


def _checkpoint(run_dir: Path, step: int) -> Path:
    found = [p for p in list_checkpoints(run_dir) if p.name == f"step-{step:06d}"]
    assert found, f"no step-{step} checkpoint in {run_dir}"
    return found[0]


def _weights(run_dir: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(_checkpoint(run_dir, step) / "model.safetensors")


def _optimizer(run_dir: Path, step: int) -> dict[str, Any]:
    state: dict[str, Any] = torch.load(_checkpoint(run_dir, step) / STATE_FILE, weights_only=False)[
        "optimizer"
    ]
    return state


def _assert_same_weights(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        # as in test_distributed_runs.py: equal up to float summation order (gradient halves reduce-scattered
        # per micro-batch vs accumulated in one process; Adam divides tiny gradients by their own scale)
        torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=5e-5)


def _assert_same_format(fsdp_ckpt: Path, plain_ckpt: Path) -> None:
    """Same files, same config.json, same optimizer layout (parameters by index, same hyperparameters)."""
    assert sorted(p.name for p in fsdp_ckpt.iterdir()) == sorted(p.name for p in plain_ckpt.iterdir())
    assert json.loads((fsdp_ckpt / "config.json").read_text()) == json.loads(
        (plain_ckpt / "config.json").read_text()
    )
    got = torch.load(fsdp_ckpt / STATE_FILE, weights_only=False)["optimizer"]
    want = torch.load(plain_ckpt / STATE_FILE, weights_only=False)["optimizer"]
    assert got["param_groups"] == want["param_groups"]
    assert got["state"].keys() == want["state"].keys()
    for index, entry in want["state"].items():
        assert got["state"][index].keys() == entry.keys()
        for name, value in entry.items():
            assert not hasattr(got["state"][index][name], "full_tensor")  # plain tensors, not DTensors
            torch.testing.assert_close(got["state"][index][name], value, rtol=1e-3, atol=1e-6)


def _resume_at_step_2(run_dir: Path, config: Any) -> Recorder:
    """Drop the run's step-3 checkpoint and redo step 3 from step 2 under ``config`` (another layout)."""
    shutil.rmtree(_checkpoint(run_dir, 3))
    sink = Recorder()
    result = train(config, sink, resume_from=run_dir)
    assert result.status == "succeeded" and [s.step for s in sink.steps] == [3]
    return sink


def test_an_fsdp_run_trains_like_one_process_and_resumes_across_layouts(
    random_model_dir: Path, tmp_path: Path
) -> None:
    plain_dir, fsdp_dir = tmp_path / "plain", tmp_path / "fsdp"
    plain, sharded = Recorder(), Recorder()
    train(_config(random_model_dir, plain_dir, 1, fsdp=False), plain)
    result = train(_config(random_model_dir, fsdp_dir, 2, fsdp=True), sharded)

    assert result.status == "succeeded" and result.steps_done == 3 and sharded.ended == "succeeded"
    assert sharded.info is not None and "x 2 processes (fsdp)" in sharded.info.device
    assert all(s.metrics["perf/micro_batch_size"] == 8 for s in sharded.steps)
    assert plain.info is not None and sharded.info.num_parameters == plain.info.num_parameters  # global count
    want = _weights(plain_dir, 3)
    start = load_file(random_model_dir / "model.safetensors")
    assert max(float((want[k] - start[k]).abs().max()) for k in want) > 1e-2  # training moved the weights
    _assert_same_weights(_weights(fsdp_dir, 3), want)
    for s1, s2 in zip(plain.steps, sharded.steps, strict=True):
        for key in ("rollout/reward_mean", "actor/pg_loss", "actor/kl", "actor/grad_norm", "actor/entropy"):
            assert s2.metrics[key] == pytest.approx(s1.metrics[key], rel=1e-4, abs=1e-6), key
    for step in (2, 3):
        _assert_same_format(_checkpoint(fsdp_dir, step), _checkpoint(plain_dir, step))

    # fsdp checkpoint -> plain 1-process resume, and plain checkpoint -> fsdp resume: both redo step 3 exactly
    _resume_at_step_2(fsdp_dir, _config(random_model_dir, fsdp_dir, 1, fsdp=False))
    _assert_same_weights(_weights(fsdp_dir, 3), want)
    _resume_at_step_2(plain_dir, _config(random_model_dir, plain_dir, 2, fsdp=True))
    _assert_same_weights(_weights(plain_dir, 3), want)
    _assert_same_format(_checkpoint(plain_dir, 3), _checkpoint(fsdp_dir, 3))  # now written by fsdp / plain
