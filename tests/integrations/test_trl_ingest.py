"""TRL's GRPOTrainer with RLVR Studio's one line (rlvr_client/trl.py): the tiny model trains for real
on the CPU against a live server, and the run arrives as a TRL run with TRL's metrics under the stable keys
and every completion, per-token arrays included, under the step it was trained in."""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlvr_client import IngestError
from rlvr_client.trl import changed_settings, completion_lengths, instrument, map_metrics
from tests.integrations import trl_helpers
from tests.integrations.live_studio import Studio
from tests.integrations.trl_helpers import REWARD_FUNCS, has_digit, tiny_grpo_trainer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


# --- the mapping, without a trainer ------------------------------------------------------------------


def test_trl_metric_names_map_onto_the_stable_keys_and_the_rest_keeps_a_trl_prefix() -> None:
    logs = {"reward": 0.5, "rewards/first_line_exact/mean": 0.25, "rewards/first_line_exact/std": 0.1,
            "completions/mean_length": 3.5, "kl": 0.01, "entropy": 0.4, "clip_ratio/region_mean": 0.0,
            "loss": 0.2, "grad_norm": 1.5, "learning_rate": 1e-4, "epoch": 0.25, "reward_std": None,
            "eval_reward": 0.7, "note": "text", "num_tokens": 1536.0}  # fmt: skip
    values = map_metrics(logs)
    assert values == pytest.approx({
        "rollout/reward_mean": 0.5, "reward/first_line_exact_mean": 0.25, "trl/rewards/first_line_exact/std": 0.1,
        "rollout/response_len_mean": 3.5, "actor/kl": 0.01, "actor/entropy": 0.4, "actor/clip_frac": 0.0,
        "actor/loss": 0.2, "actor/grad_norm": 1.5, "actor/lr": 1e-4, "trl/epoch": 0.25,
        "rollout/reward_std": math.nan, "eval/trl/reward": 0.7, "perf/tokens_total": 1536.0,
    }, nan_ok=True)  # fmt: skip


def test_the_loss_is_also_the_pg_loss_only_when_trl_adds_nothing_to_it() -> None:
    assert map_metrics({"loss": 0.2}, loss_is_pg_loss=True) == {"actor/loss": 0.2, "actor/pg_loss": 0.2}
    assert "actor/pg_loss" not in map_metrics({"loss": 0.2})
    assert map_metrics({"loss": 0.2, "policy_loss": 0.1}, loss_is_pg_loss=True)["actor/pg_loss"] == 0.1


def test_a_completion_whose_mask_trl_zeroed_keeps_its_tokens_up_to_the_padding() -> None:
    ids = [
        [5, 6, 1, 0, 0],
        [5, 6, 7, 8, 0],
        [5, 0, 7, 0, 0],
    ]  # pad 0, EOS 1; rows 2-3 cut at the length limit
    mask = [[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 0, 0]]  # mask_truncated_completions zeroed row 2
    assert completion_lengths(ids, mask, pad_id=0) == [3, 4, 3]


def test_the_run_config_holds_the_grpo_settings_a_script_changed_and_no_secret(tmp_path: Path) -> None:
    from trl import GRPOConfig

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], beta=0.04, num_generations=4,
                      hub_token="hf_secret", bf16=False, activation_checkpointing=False)  # fmt: skip
    changed = changed_settings(args)
    assert (changed["beta"], changed["num_generations"], changed["bf16"]) == (0.04, 4, False)
    assert not {"hub_token", "learning_rate", "accelerator_config", "debug"} & set(changed)
    assert "hf_secret" not in str(changed)


def test_instrument_takes_only_a_grpo_trainer() -> None:
    with pytest.raises(IngestError, match="GRPOTrainer"):
        instrument(object(), project="lab")  # type: ignore[arg-type]


# --- real training against a live server -------------------------------------------------------------


def test_a_trl_run_arrives_with_metrics_and_token_level_rollouts_for_every_step(
    studio: Studio, warm_model_dir: Path, tmp_path: Path
) -> None:
    trainer = tiny_grpo_trainer(
        warm_model_dir, tmp_path / "out", beta=0.04, save_strategy="steps", save_steps=2
    )
    instrument(trainer, project=studio.project.slug, name="grpo-tiny")
    trainer.train()

    run = studio.only_run()
    assert (run.source, run.status, run.max_steps, run.experiment.name) == (
        "trl",
        "succeeded",
        3,
        "grpo-tiny",
    )
    assert run.source_info["library"] == "trl" and run.source_info["version"] == "1.16.0"
    assert run.config["num_generations"] == 4 and run.config["beta"] == 0.04
    assert run.final_metrics["trl/train_runtime"] > 0 and "rollout/reward_mean" in run.final_metrics
    for key in ("rollout/reward_mean", "actor/kl", "actor/entropy", "actor/grad_norm", "actor/loss",
                "rollout/response_len_mean", *(f"reward/{name}_mean" for name in REWARD_FUNCS)):  # fmt: skip
        assert studio.metric_steps(run.pk, key) == [1, 2, 3], key
    assert [c["step"] for c in studio.get(f"/api/runs/{run.pk}/checkpoints/")] == [
        2,
        3,
    ]  # save_steps, and the end
    reward_means = studio.get(f"/api/runs/{run.pk}/metrics/", keys="rollout/reward_mean")["metrics"][
        "rollout/reward_mean"
    ]
    for step, logged_mean in zip(reward_means["step"], reward_means["value"], strict=True):
        rollouts = studio.rollouts(run.pk, step)
        assert sorted((r["group"], r["sample_index"]) for r in rollouts) == [
            (g, s) for g in range(2) for s in range(4)
        ]
        # TRL's logged reward of step k is the mean over the completions trained in step k: the same ones.
        assert statistics.fmean(r["reward"] for r in rollouts) == pytest.approx(logged_mean, abs=1e-6)
        for r in rollouts:
            assert set(r["rewards"]) == set(REWARD_FUNCS)
            assert r["reward"] == pytest.approx(sum(r["rewards"].values()))
            assert r["correct"] is None and r["prompt"].endswith("=")


def test_each_rollout_carries_trls_token_arrays_and_its_groups_advantage(
    studio: Studio, warm_model_dir: Path, tmp_path: Path
) -> None:
    trainer = tiny_grpo_trainer(warm_model_dir, tmp_path / "out", beta=0.04, max_steps=2)
    instrument(trainer, project=studio.project.slug, name="grpo-tiny")
    trainer.train()

    run = studio.only_run()
    rollouts = studio.rollouts(run.pk, 2)
    for group in range(2):
        members = sorted((r for r in rollouts if r["group"] == group), key=lambda r: r["sample_index"])
        rewards = [r["reward"] for r in members]
        mean, std = statistics.fmean(rewards), statistics.stdev(rewards)
        # GRPO's group-normalised advantage (TRL's scale_rewards="group", its 1e-4 guard).
        assert [r["advantage"] for r in members] == pytest.approx(
            [(x - mean) / (std + 1e-4) for x in rewards], abs=1e-5
        )
    for summary in rollouts:
        r = studio.get(f"/api/runs/{run.pk}/rollouts/{summary['id']}/")
        n = r["length"]
        assert n > 0 and len(r["token_ids"]) == len(r["tokens"]) == n
        channels = {name: values for name, values in r["channels"].items() if values is not None}
        assert set(channels) == {"logprob", "old_logprob", "ref_logprob", "entropy", "advantage", "loss_mask"}
        assert all(len(values) == n for values in channels.values())
        assert channels["loss_mask"] == [1.0] * n
        assert channels["advantage"] == pytest.approx([r["advantage"]] * n, abs=1e-6)  # float32 storage
        assert all(lp <= 0 for lp in channels["logprob"]) and all(h >= 0 for h in channels["entropy"])
        assert (
            channels["logprob"] == channels["old_logprob"]
        )  # on-policy: TRL's old logprobs are the sampling ones
        ends = {
            *trainer.eos_token_ids,
            trainer.processing_class.pad_token_id,
        }  # what TRL counts as not clipped
        assert r["finish_reason"] == ("eos" if r["token_ids"][-1] in ends else "length")


def test_a_completion_cut_at_the_limit_and_masked_out_keeps_its_tokens_with_no_credit(
    studio: Studio, warm_model_dir: Path, tmp_path: Path
) -> None:
    """mask_truncated_completions: TRL zeroes the mask of a completion that hit max_completion_length."""
    trainer = tiny_grpo_trainer(warm_model_dir, tmp_path / "out", max_steps=1, max_completion_length=2,
                                mask_truncated_completions=True)  # fmt: skip
    instrument(trainer, project=studio.project.slug, name="grpo-masked")
    trainer.train()

    run = studio.only_run()
    details = [studio.get(f"/api/runs/{run.pk}/rollouts/{r['id']}/") for r in studio.rollouts(run.pk, 1)]
    cut = [r for r in details if r["finish_reason"] == "length"]
    assert cut, "two-digit sums need 3 tokens (digits and EOS): some completions are cut"
    for r in details:
        n, channels = r["length"], r["channels"]
        assert len(r["token_ids"]) == len(channels["loss_mask"]) == n > 0  # not the mask's sum, 0 when cut
        in_loss = 0.0 if r in cut else 1.0
        assert channels["loss_mask"] == [in_loss] * n
        assert channels["advantage"] == pytest.approx([in_loss * r["advantage"]] * n, abs=1e-6)


def test_a_generation_reused_for_two_steps_is_sent_once_under_the_first(
    studio: Studio, warm_model_dir: Path, tmp_path: Path
) -> None:
    """steps_per_generation=2: TRL generates for steps 1 and 3 and trains 2 and 4 on the second halves."""
    trainer = tiny_grpo_trainer(warm_model_dir, tmp_path / "out", max_steps=4, steps_per_generation=2)
    instrument(trainer, project=studio.project.slug, name="grpo-reuse")
    trainer.train()

    run = studio.only_run()
    assert studio.metric_steps(run.pk, "actor/loss") == [1, 2, 3, 4]
    assert studio.metric_steps(run.pk, "rollout/reward_mean") == [1, 3]  # TRL logs rewards when it generates
    assert [len(studio.rollouts(run.pk, step)) for step in (1, 2, 3, 4)] == [16, 0, 16, 0]
    for summary in studio.rollouts(
        run.pk, 3
    ):  # half trained in step 3, half in step 4: all have their entropies
        channels = studio.get(f"/api/runs/{run.pk}/rollouts/{summary['id']}/")["channels"]
        assert channels["entropy"] is not None and len(channels["entropy"]) == summary["length"]
        assert channels["logprob"] == channels["old_logprob"] is not None  # TRL's old_per_token_logps


def test_a_crash_inside_training_marks_the_run_failed_with_its_message(
    studio: Studio, warm_model_dir: Path, tmp_path: Path
) -> None:
    calls = {"n": 0}

    def breaks_on_the_second_step(completions: list[str], **kwargs: Any) -> list[float]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the grader's database went away")
        return has_digit(completions)

    trainer = tiny_grpo_trainer(warm_model_dir, tmp_path / "out", reward_funcs=[breaks_on_the_second_step])
    instrument(trainer, project=studio.project.slug, name="grpo-crash")
    with pytest.raises(RuntimeError, match="went away"):
        trainer.train()

    run = studio.only_run()
    assert run.status == "failed" and "RuntimeError: the grader's database went away" in run.error_message
    assert studio.metric_steps(run.pk, "rollout/reward_mean") == [1]
    assert len(studio.rollouts(run.pk, 1)) == 8


def test_two_processes_send_each_completion_once_with_its_group_across_them(
    studio: Studio, warm_model_dir: Path, tmp_path: Path
) -> None:
    """torchrun, 2 CPU processes: a prompt's 4 completions are generated 2 on each; the main process sends all 4."""
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [str(torchrun), "--nproc_per_node", "2", trl_helpers.__file__, str(warm_model_dir), str(tmp_path / "out"),
               studio.project.slug]  # fmt: skip
    done = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=trl_helpers.REPO,
                          capture_output=True, text=True, timeout=150, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]

    run = studio.only_run()
    assert run.status == "succeeded"
    logged = studio.get(f"/api/runs/{run.pk}/metrics/", keys="rollout/reward_mean")["metrics"][
        "rollout/reward_mean"
    ]
    assert logged["step"] == [1, 2]
    for step, logged_mean in zip(logged["step"], logged["value"], strict=True):
        rollouts = studio.rollouts(run.pk, step)
        assert sorted((r["group"], r["sample_index"]) for r in rollouts) == [(0, s) for s in range(4)]
        assert len({r["prompt"] for r in rollouts}) == 1
        assert statistics.fmean(r["reward"] for r in rollouts) == pytest.approx(logged_mean, abs=1e-6)
