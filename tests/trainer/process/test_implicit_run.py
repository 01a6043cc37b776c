"""The implicit step scorer in real training runs on the tiny random model: the run reports the implicit PRM's
metrics, saves the PRM with every checkpoint, and a resumed run continues the same PRM (weights and optimizer),
ending where an uninterrupted run ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import ExperimentConfig
from trainer.models.checkpoint import latest_checkpoint, load_state
from trainer.process.implicit_prm import CHECKPOINT_FOLDER, ImplicitPRMState
from trainer.step.loop import train
from trainer.step.run_setup import build_run

# Steps cut after each digit (the digit reward's task), scored by the implicit PRM at a tiny-model learning rate.
PROCESS: dict[str, Any] = {
    "segmenter": {"name": "pattern", "params": {"pattern": "[0-9]"}},
    "scorer": {"name": "implicit", "params": {"beta": 0.5, "lr": 1e-3}},
    "credit": "sum",
}


def implicit_config(model_dir: Path, out_dir: Path, max_steps: int) -> ExperimentConfig:
    return tiny_config(
        model_dir,
        out_dir,
        process_reward=PROCESS,
        rollout={"max_completion_length": 8},
        training={"max_steps": max_steps},
        checkpoint={"output_dir": str(out_dir), "save_steps": 1},
    )


def saved_prm(out_dir: Path) -> dict[str, torch.Tensor]:
    ckpt = latest_checkpoint(out_dir)
    assert ckpt is not None
    return load_file(ckpt / CHECKPOINT_FOLDER / "model.safetensors")


def test_a_run_with_the_implicit_scorer_reports_its_metrics_and_saves_the_prm(
    random_model_dir: Path, tmp_path: Path
) -> None:
    sink = Steps()
    train(implicit_config(random_model_dir, tmp_path, 2), sink, log=lambda m: None)
    for report in sink.reports:
        for key in ("process/implicit_loss", "process/implicit_acc", "process/implicit_reward_mean"):
            assert key in report.metrics
        assert "process/credit_abs_mean" in report.metrics
    first = sink.reports[0].metrics
    assert first["process/implicit_reward_mean"] == 0.0  # the PRM starts equal to its reference
    assert sink.reports[1].metrics["process/implicit_reward_mean"] != 0.0  # and moved with step 1's update
    start = load_file(random_model_dir / "model.safetensors")
    prm = saved_prm(tmp_path)
    assert any(not torch.equal(prm[name], start[name]) for name in prm)
    ckpt = latest_checkpoint(tmp_path)
    assert ckpt is not None
    state = load_state(ckpt).scorer_state
    assert state is not None and state["updates"] == 2


def test_a_resumed_run_continues_the_same_implicit_prm(random_model_dir: Path, tmp_path: Path) -> None:
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    train(implicit_config(random_model_dir, straight, 3), log=lambda m: None)
    train(implicit_config(random_model_dir, stopped, 2), log=lambda m: None)
    at_two = saved_prm(stopped)
    ckpt = latest_checkpoint(stopped)
    assert ckpt is not None
    run = build_run(implicit_config(random_model_dir, stopped, 3), resume_from=stopped, log=lambda m: None)
    assert isinstance(run.scorer_state, ImplicitPRMState) and run.scorer_state.updates == 2
    restored = dict(run.scorer_state.model.named_parameters())
    name = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(restored[name].detach(), at_two[name])
    saved_optimizer = load_state(ckpt).scorer_state["optimizer"]  # type: ignore[index]
    moments = run.scorer_state.optimizer.state_dict()["state"]
    assert torch.equal(moments[0]["exp_avg"], saved_optimizer["state"][0]["exp_avg"])
    run.close()
    train(implicit_config(random_model_dir, stopped, 3), resume_from=stopped, log=lambda m: None)
    resumed, uninterrupted = saved_prm(stopped), saved_prm(straight)
    assert all(torch.allclose(resumed[k], uninterrupted[k], atol=1e-6) for k in uninterrupted)


def test_a_run_with_a_kl_reference_lends_it_to_the_implicit_prm(
    random_model_dir: Path, tmp_path: Path
) -> None:
    config = tiny_config(
        random_model_dir,
        tmp_path,
        process_reward=PROCESS,
        algorithm={"beta": 0.04},
        checkpoint={"output_dir": str(tmp_path), "save_steps": 1},
    )
    run = build_run(config, log=lambda m: None)
    assert isinstance(run.scorer_state, ImplicitPRMState)
    assert run.ref_model is not None and run.scorer_state.ref is run.ref_model
    assert run.scorer_state.model is not run.model
    run.close()


def test_an_asynchronous_run_trains_with_the_implicit_scorer(random_model_dir: Path, tmp_path: Path) -> None:
    """The background generator samples with its own copy of the policy; the PRM is scored and updated on the
    training thread, so the two never share a model."""
    sink = Steps()
    config = tiny_config(
        random_model_dir,
        tmp_path,
        process_reward=PROCESS,
        training={"max_steps": 2, "max_off_policy_steps": 1},
        checkpoint={"output_dir": str(tmp_path), "save_steps": 1},
    )
    train(config, sink, log=lambda m: None)
    assert [r.step for r in sink.reports] == [1, 2]
    assert all("process/implicit_loss" in r.metrics for r in sink.reports)
    ckpt = latest_checkpoint(tmp_path)
    assert ckpt is not None and (ckpt / CHECKPOINT_FOLDER / "model.safetensors").is_file()
