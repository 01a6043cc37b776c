"""Data-parallel training (issue 8 part 1), the fast parts: config rules, metric combination, per-group
seeding, the event relay and failure diagnosis. The multi-process runs are in test_distributed_runs.py."""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.trainer.loop_helpers import tiny_config
from trainer.config import config_from_dict
from trainer.distributed.context import DistContext, EventFileSink, combine_metrics, step_report_from_json
from trainer.distributed.launch import _EventReader, _torchrun_failures, diagnose
from trainer.errors import ConfigError
from trainer.sinks import RolloutRecord, StepReport
from trainer.step.collect import collect_rollouts
from trainer.step.run_setup import build_run


def _config(**sections: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"training": {"num_processes": 2, "prompts_per_step": 4}}
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    return data


def test_per_prompt_seeding_is_on_exactly_with_more_than_one_process_and_one_process_is_the_default() -> None:
    assert config_from_dict({}).training.num_processes == 1
    assert config_from_dict({}).rollout.seed_per_prompt is None  # null: decided by the process count
    assert config_from_dict({}).seeds_per_prompt is False
    assert config_from_dict(_config()).seeds_per_prompt is True
    assert (
        config_from_dict({"rollout": {"seed_per_prompt": True}}).seeds_per_prompt is True
    )  # 1-process reference


def test_two_processes_refuse_seed_per_prompt_false() -> None:
    with pytest.raises(ConfigError, match=r"seed_per_prompt false with training.num_processes 2"):
        config_from_dict(_config(rollout={"seed_per_prompt": False}))


def test_prompts_per_step_must_split_evenly_over_the_processes() -> None:
    with pytest.raises(
        ConfigError, match=r"prompts_per_step \(3\) must be divisible by training.num_processes \(2\)"
    ):
        config_from_dict(_config(training={"prompts_per_step": 3}))


# Each computes something over the whole step (or decides from every group's outcome); they run across
# processes with the 1-process result (tests/trainer/test_mode_matrix.py compares the runs).
STEP_WIDE = [
    {"algorithm": {"advantage_estimator": "reinforce_pp"}},
    {"algorithm": {"advantage_estimator": {"name": "grpo", "params": {"scale_rewards": "batch"}}}},
    {"algorithm": {"token_credit": "top_entropy"}},
    {"algorithm": {"importance_sampling_level": "segment"}},
    {"algorithm": {"clip_mode": "gapo"}},
    {"budget": {"dynamic_sampling": True}},
    {"budget": {"allocator": "vigor"}},
    {"budget": {"allocator": "sara"}},
    {"budget": {"allocator": "early_abandon"}},
    {"budget": {"prompt_sampler": "beta_learnability"}},
    {"teacher": {"mode": "self"}},
    {
        "teacher": {"name_or_path": "tiny:addition-teacher", "fusion": "puu"},
        "algorithm": {"token_credit": "ecr"},
    },
    {
        "rubric": {
            "criteria": [{"name": "short", "rule": {"type": "length", "params": {"unit": "chars", "max": 8}}}]
        }
    },
]


@pytest.mark.parametrize("sections", STEP_WIDE, ids=lambda s: next(iter(s.values())).__repr__()[:60])
def test_step_wide_methods_run_on_two_processes(sections: dict[str, Any]) -> None:
    config = config_from_dict(_config(**sections))
    assert config.training.num_processes == 2 and config.seeds_per_prompt


def test_a_colocated_vllm_engine_is_refused_on_two_processes_with_why() -> None:
    with pytest.raises(
        ConfigError,
        match=r"training\.num_processes 2 does not support rollout\.engine 'vllm' "
        r"with vllm_mode 'colocated' .* use vllm_mode 'server'",
    ):
        config_from_dict(_config(rollout={"engine": "vllm"}))
    config_from_dict({"rollout": {"engine": "vllm"}})  # one process: fine
    config_from_dict(_config(rollout={"engine": "vllm", "vllm_mode": "server"}))  # a server per process: fine


def test_a_sampling_rubric_judge_is_refused_on_two_processes_and_a_greedy_one_runs() -> None:
    judge = {"name": "tidy", "scorer": "judge"}
    rubric = {"criteria": [judge], "judge_model": {"name_or_path": "tiny:addition"}}
    config_from_dict(_config(rubric=rubric))  # top_k 1 (the default) is greedy
    sampling = {**rubric, "judge_model": {"name_or_path": "tiny:addition", "top_k": 5}}
    with pytest.raises(ConfigError, match=r"a sampling rubric judge \(rubric.judge_model.top_k above 1 or 0"):
        config_from_dict(_config(rubric=sampling))
    config_from_dict({"rubric": sampling})  # one process: fine


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
def test_loss_types_with_step_wide_normalisers_are_kept_on_two_processes(loss_type: str) -> None:
    """Their normalisers (sequences, loss tokens, micro-batches of the step) are summed over the ranks
    (test_two_ranks_with_global_normalisers_update_exactly_like_one checks the update), so a 2-process
    config keeps the loss type asked for, on an even split of the groups with per-prompt seeding."""
    config = config_from_dict(_config(algorithm={"loss_type": loss_type}))

    assert config.algorithm.loss_type == loss_type
    assert (config.training.num_processes, config.training.prompts_per_step) == (2, 4)
    assert config.seeds_per_prompt is True  # on with num_processes > 1: a group samples the same on any rank


def test_metrics_combine_by_their_meaning() -> None:
    rank0 = {
        "rollout/reward_mean": 1.0,
        "rollout/reward_std": 0.0,
        "rollout/response_len_max": 4.0,
        "actor/pg_loss": 0.25,
        "actor/grad_norm": 2.0,
        "perf/train_s": 1.0,
        "budget/rollouts_used": 2.0,
        "budget/group_size_min": 2.0,
        "eval/addition/accuracy": 0.5,
    }
    rank1 = {
        "rollout/reward_mean": 0.0,
        "rollout/reward_std": 0.0,
        "rollout/response_len_max": 7.0,
        "actor/pg_loss": 0.5,
        "actor/grad_norm": 2.0,
        "perf/train_s": 3.0,
        "budget/rollouts_used": 6.0,
        "budget/group_size_min": 6.0,
        "eval/addition/accuracy": 0.5,
    }
    out = combine_metrics([(rank0, 2), (rank1, 6)])
    assert out["rollout/reward_mean"] == pytest.approx(0.25)  # weighted by completions
    rewards = torch.tensor([1.0, 1.0] + [0.0] * 6)
    assert out["rollout/reward_std"] == pytest.approx(float(rewards.std()))  # pooled, not averaged
    assert out["rollout/response_len_max"] == 7.0 and out["budget/group_size_min"] == 2.0
    assert out["actor/pg_loss"] == pytest.approx(0.75)  # shares of a globally normalised loss
    assert out["budget/rollouts_used"] == 8.0 and out["perf/train_s"] == 3.0
    assert out["actor/grad_norm"] == 2.0 and out["eval/addition/accuracy"] == 0.5


def test_pooled_reward_std_matches_the_std_of_all_rewards() -> None:
    gen = torch.Generator().manual_seed(0)
    a, b = torch.rand(5, generator=gen), torch.rand(11, generator=gen)
    parts = [
        ({"rollout/reward_mean": float(x.mean()), "rollout/reward_std": float(x.std())}, len(x))
        for x in (a, b)
    ]
    assert combine_metrics(parts)["rollout/reward_std"] == pytest.approx(
        float(torch.cat([a, b]).std()), rel=1e-6
    )


def test_each_rank_takes_a_contiguous_share() -> None:
    shares = [DistContext(rank=r, world_size=3).share(6) for r in range(3)]
    assert [list(range(6))[s] for s in shares] == [[0, 1], [2, 3], [4, 5]]


def test_a_group_samples_the_same_completions_whatever_else_is_generated(
    random_model_dir: Path, tmp_path: Path
) -> None:
    """seed_per_prompt: a group's completions depend on (seed, step, group index) only, so the rank that
    generates it (with a different batch around it) gets exactly what one process gets."""
    cfg = tiny_config(
        random_model_dir, tmp_path / "a", rollout={"seed_per_prompt": True}, training={"prompts_per_step": 4}
    )
    both = collect_rollouts(build_run(cfg, log=lambda m: None), step=1)
    run = build_run(cfg, log=lambda m: None)
    run.dist = _SoloShare(rank=1, world_size=2)  # the second half of the groups, as rank 1 of 2 takes them
    second = collect_rollouts(run, step=1)
    assert second.batch.texts == both.batch.texts[16:]
    assert torch.equal(second.batch.logprobs, both.batch.logprobs[16:, : second.batch.logprobs.shape[1]])
    assert run.sampler.rollouts_observed == 32  # observations of every rank, gathered
    plain = collect_rollouts(
        build_run(
            tiny_config(random_model_dir, tmp_path / "b", training={"prompts_per_step": 4}),
            log=lambda m: None,
        ),
        step=1,
    )
    assert (
        plain.batch.texts != both.batch.texts
    )  # the option changes sampling (default runs stay as they were)


class _SoloShare(DistContext):
    """A rank's view without a process group: all_gather repeats this rank's part for every rank (the
    observations are counted like the real gather's, which is all the uniform sampler uses)."""

    def all_gather(self, obj: Any) -> list[Any]:
        return [obj] * self.world_size


def _record(group: int) -> RolloutRecord:
    return RolloutRecord(
        step=1,
        prompt_id="p",
        group=group,
        sample_index=0,
        prompt="1+1=",
        completion="2",
        finish_reason="eos",
        reward=float("nan"),
        rewards={"exact": 1.0},
        correct=True,
        details={},
        advantage=0.5,
        token_ids=[5],
        tokens=["2"],
        token_values={"logprob": [-0.1]},
    )


def test_rank_events_round_trip_through_the_file_and_partial_lines_wait(tmp_path: Path) -> None:
    sink = EventFileSink(tmp_path)
    report = StepReport(
        step=1, max_steps=2, metrics={"rollout/reward_mean": 0.5}, rollouts=[_record(3)], elapsed_s=0.1
    )
    sink.on_step(report)
    reader = _EventReader(tmp_path / "events.jsonl")
    (event,) = reader.read()
    back = step_report_from_json(event["report"])
    assert back.rollouts[0].group == 3 and math.isnan(back.rollouts[0].reward)
    assert back.metrics == report.metrics
    with open(tmp_path / "events.jsonl", "a") as fh:
        fh.write('{"event": "log", "mess')
    assert reader.read() == []
    with open(tmp_path / "events.jsonl", "a") as fh:
        fh.write('age": "hi"}\n')
    assert reader.read() == [{"event": "log", "message": "hi"}]


TORCHRUN_SUMMARY = """Failures:
[1]:
  time      : 2026-11-29_23:31:54
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 8604)  (SIGTERM)
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_23:31:54
  rank      : 1 (local_rank: 1)
  exitcode  : 3 (pid: 8605)
"""


def test_a_rank_that_died_hard_is_named_with_its_exit_status(tmp_path: Path) -> None:
    assert _torchrun_failures(TORCHRUN_SUMMARY) == [(0, -signal.SIGTERM), (1, 3)]
    (tmp_path / "torchrun.log").write_text(TORCHRUN_SUMMARY)
    (tmp_path / "rank1.log").write_text("loading\nstep 2 starting\n")
    message, details = diagnose(tmp_path, 1, "runs/x")
    assert "rank 1 exited with status 3" in message and "torchrun exit status 1" in message
    assert "step 2 starting" in message and "--resume runs/x" in message
    assert "--- rank1 (last lines) ---" in details


def test_the_first_python_error_is_reported_and_a_user_error_keeps_its_message(tmp_path: Path) -> None:
    (tmp_path / "torchrun.log").write_text(TORCHRUN_SUMMARY.replace("exitcode  : 3", "exitcode  : 1"))
    for rank, t, msg in (
        (0, 2.0, "RuntimeError: [gloo] connection closed"),
        (1, 1.0, "data.path x.jsonl: line 3"),
    ):
        (tmp_path / f"rank{rank}.error.json").write_text(
            json.dumps(
                {
                    "rank": rank,
                    "time": t,
                    "message": msg,
                    "user_error": rank == 1,
                    "traceback": "Traceback ...",
                }
            )
        )
    message, details = diagnose(tmp_path, 1, "runs/x")
    assert message == "data.path x.jsonl: line 3" and details.startswith("Traceback")


class _OtherRankKnown:
    """One rank's collectives in a 2-rank step simulated in one process: the step's counts are given, and
    the gradient all-reduce adds the other rank's gradients (captured from its own update) or, with
    ``capture``, records this rank's gradients for the other one."""

    def __init__(self, totals: list[float], other_grads: list[torch.Tensor] | None = None) -> None:
        self.totals = totals
        self.other_grads = other_grads
        self.captured: list[torch.Tensor] = []

    def all_reduce_sum(self, values: list[float]) -> list[float]:
        return list(self.totals)

    def all_reduce_grads(self, params: list[torch.nn.Parameter]) -> None:
        if self.other_grads is None:
            self.captured = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params]
            return
        for p, g in zip(params, self.other_grads, strict=True):
            p.grad = g.clone() if p.grad is None else p.grad + g


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
def test_two_ranks_with_global_normalisers_update_exactly_like_one(
    random_model_dir: Path, loss_type: str
) -> None:
    """policy_update in a rank: global counts in the loss normalisers and summed gradients (clipped after
    the sum) give the 1-process update of the whole batch, for every aggregation rule."""
    import copy
    import dataclasses

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.rollout import HFRolloutEngine, SamplingParams
    from trainer.step.optimize import UpdateBatch, policy_update

    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    engine = HFRolloutEngine(model, AutoTokenizer.from_pretrained(random_model_dir))
    batch = engine.generate(
        ["12+34=", "7+8=", "50+50=", "1+1="] * 2, SamplingParams(6), torch.Generator().manual_seed(0)
    )
    cfg = config_from_dict(
        {
            "rollout": {"max_completion_length": 6},
            "algorithm": {"loss_type": loss_type, "beta": 0.0},
            "training": {"micro_batch_size": 2, "max_grad_norm": 0.05},
        }
    )
    mask = batch.completion_mask.float()
    mask[0, 1:] = 0  # ranks with different token counts
    advantages = torch.tensor([2.0, -1.0, 0.5, -0.5, 1.0, -2.0, 0.3, 1.5])[:, None] * mask

    def rows(sl: slice) -> UpdateBatch:
        part = dataclasses.replace(
            batch,
            **{
                f.name: getattr(batch, f.name)[sl]
                for f in dataclasses.fields(batch)
                if getattr(batch, f.name) is not None
            },
        )
        return UpdateBatch(part, advantages[sl], mask[sl], None, None)

    def run(data: UpdateBatch, dist: Any) -> tuple[Any, torch.nn.Module]:
        m = copy.deepcopy(model)
        return policy_update(m, torch.optim.SGD(m.parameters(), lr=1.0), data, cfg, dist), m

    halves = [rows(slice(0, 4)), rows(slice(4, 8))]
    totals = [8.0, float(mask.sum()), 4.0]  # sequences, loss tokens, micro-batches of the whole step
    whole, whole_model = run(rows(slice(0, 8)), None)
    rank1 = _OtherRankKnown(totals)
    stats1, _ = run(halves[1], rank1)
    stats0, rank0_model = run(halves[0], _OtherRankKnown(totals, rank1.captured))

    assert (
        stats0.grad_norm == pytest.approx(whole.grad_norm, rel=1e-5) and whole.grad_norm > 0.05
    )  # clipping is active
    assert stats0.pg_loss + stats1.pg_loss == pytest.approx(whole.pg_loss, rel=1e-5, abs=1e-7)
    assert stats0.entropy + stats1.entropy == pytest.approx(whole.entropy, rel=1e-5)
    for (name, p), q in zip(whole_model.named_parameters(), rank0_model.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=name)
