"""End-to-end runs of the loop on a tiny untrained model: every estimator x loss trains."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.trainer.loop_helpers import tiny_config
from trainer.sinks import StepReport
from trainer.step.loop import train


class Recorder:
    def __init__(self) -> None:
        self.steps: list[StepReport] = []
        self.events: list[str] = []

    def on_start(self, info: object) -> None:
        self.events.append("start")

    def on_step(self, report: StepReport) -> None:
        self.steps.append(report)

    def on_checkpoint(self, step: int, path: str) -> None:
        self.events.append(f"checkpoint:{step}")

    def on_end(self, status: str, final_metrics: dict[str, float]) -> None:
        self.events.append(f"end:{status}")

    def on_error(self, message: str, traceback_text: str) -> None:
        self.events.append(f"error:{message}")


def final_weights(out_dir: Path) -> dict[str, torch.Tensor]:
    from trainer.models.checkpoint import latest_checkpoint

    ckpt = latest_checkpoint(out_dir)
    assert ckpt is not None
    return dict(AutoModelForCausalLM.from_pretrained(ckpt).state_dict())


def changed(before: Path, after_dir: Path) -> bool:
    a = AutoModelForCausalLM.from_pretrained(before).state_dict()
    b = final_weights(after_dir)
    return any(not torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("estimator", ["grpo", "dr_grpo", "rloo", "reinforce_pp"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_every_estimator_and_ratio_level_trains(
    random_model_dir: Path, tmp_path: Path, estimator: str, level: str
) -> None:
    cfg = tiny_config(
        random_model_dir,
        tmp_path,
        algorithm={"advantage_estimator": estimator, "importance_sampling_level": level},
    )
    rec = Recorder()
    result = train(cfg, sink=rec, log=lambda m: None)
    assert result.status == "succeeded" and len(rec.steps) == 2
    for report in rec.steps:
        assert math.isfinite(report.metrics["actor/loss"])
        assert report.metrics["actor/grad_norm"] > 0
    assert changed(random_model_dir, tmp_path)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
def test_every_loss_normalisation_trains(random_model_dir: Path, tmp_path: Path, loss_type: str) -> None:
    cfg = tiny_config(
        random_model_dir, tmp_path, algorithm={"loss_type": loss_type}, training={"max_steps": 1}
    )
    rec = Recorder()
    train(cfg, sink=rec, log=lambda m: None)
    assert math.isfinite(rec.steps[0].metrics["actor/loss"])
    assert changed(random_model_dir, tmp_path)


def test_kl_penalty_multiple_iterations_and_entropy_masking_together(
    random_model_dir: Path, tmp_path: Path
) -> None:
    cfg = tiny_config(
        random_model_dir,
        tmp_path,
        algorithm={
            "beta": 0.1,
            "kl_estimator": "k3",
            "num_iterations": 2,
            "token_credit": {"name": "top_entropy", "params": {"quantile": 0.5}},
            "mask_truncated_completions": True,
        },
    )
    rec = Recorder()
    train(cfg, sink=rec, log=lambda m: None)
    m = rec.steps[-1].metrics
    assert "actor/kl" in m and m["actor/kl"] >= 0
    # The second pass runs after an update, so its ratios move off 1 and some may clip.
    assert 0 <= m["actor/clip_frac"] <= 1


def test_the_first_pass_ratio_is_one_so_nothing_clips(random_model_dir: Path, tmp_path: Path) -> None:
    rec = Recorder()
    train(tiny_config(random_model_dir, tmp_path, training={"max_steps": 1}), sink=rec, log=lambda m: None)
    assert rec.steps[0].metrics["actor/clip_frac"] == 0.0


def test_sampling_logprobs_match_the_training_forward(random_model_dir: Path, tmp_path: Path) -> None:
    """The rollout engine's logprobs and the training forward agree (same positions, same temperature)."""
    rec = Recorder()
    train(
        tiny_config(random_model_dir, tmp_path, training={"max_steps": 1}, rollout={"temperature": 0.7}),
        sink=rec,
        log=lambda m: None,
    )
    for r in rec.steps[0].rollouts:
        sampled, trained = r.token_values["logprob"], r.token_values["old_logprob"]
        assert sampled == pytest.approx(trained, abs=1e-4)


def test_rollout_records_carry_per_token_arrays_of_equal_length(
    random_model_dir: Path, tmp_path: Path
) -> None:
    rec = Recorder()
    train(tiny_config(random_model_dir, tmp_path, training={"max_steps": 1}), sink=rec, log=lambda m: None)
    records = rec.steps[0].rollouts
    assert len(records) == 16
    assert {r.group for r in records} == {0, 1} and {r.sample_index for r in records} == set(range(8))
    for r in records:
        n = len(r.token_ids)
        assert 1 <= n <= 4 and len(r.tokens) == n
        assert set(r.token_values) >= {"logprob", "old_logprob", "entropy", "advantage", "loss_mask"}
        assert all(len(v) == n for v in r.token_values.values())
        specials = {"<eos>", "<unk>", "<bos>", "<pad>"}  # an untrained model samples these too
        assert "".join(t for t in r.tokens if t not in specials) == r.completion
        assert r.finish_reason in {"eos", "length"}
        assert r.token_values["advantage"] == pytest.approx([r.advantage] * n)


def test_metrics_use_the_stable_names(random_model_dir: Path, tmp_path: Path) -> None:
    rec = Recorder()
    train(tiny_config(random_model_dir, tmp_path, training={"max_steps": 1}), sink=rec, log=lambda m: None)
    keys = set(rec.steps[0].metrics)
    assert {
        "rollout/reward_mean",
        "rollout/accuracy",
        "rollout/response_len_mean",
        "rollout/zero_std_frac",
        "reward/regex_format_mean",
        "actor/pg_loss",
        "actor/entropy",
        "actor/clip_frac",
        "actor/grad_norm",
        "perf/step_s",
        "perf/gen_tokens_per_s",
    } <= keys
    assert all(k.split("/")[0] in {"rollout", "reward", "actor", "perf", "budget"} for k in keys)


def test_should_stop_cancels_at_a_step_boundary_with_a_checkpoint(
    random_model_dir: Path, tmp_path: Path
) -> None:
    rec = Recorder()
    calls = iter([False, True])
    result = train(
        tiny_config(random_model_dir, tmp_path, training={"max_steps": 5}),
        sink=rec,
        should_stop=lambda: next(calls),
        log=lambda m: None,
    )
    assert result.status == "cancelled" and result.steps_done == 1
    assert rec.events[-2:] == ["checkpoint:1", "end:cancelled"]


def test_a_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    from trainer.errors import ConfigError

    cfg = tiny_config(tmp_path / "no-such-model", tmp_path / "out")
    with pytest.raises(ConfigError, match="does not exist"):
        train(cfg, log=lambda m: None)
