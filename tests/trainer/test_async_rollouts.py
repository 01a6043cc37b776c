"""Asynchronous RL (training.max_off_policy_steps): the staleness bound, importance weights, exact resume, a
generator process that fails, dies or stalls (faults injected in the real process through RLVR_TEST_GENERATOR_FAULT),
its own cores, and the weights it receives through shared memory."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.distributed.context import DistContext
from trainer.errors import CheckpointError, ConfigError
from trainer.models.checkpoint import latest_checkpoint, load_state
from trainer.rollout.shared_weights import WeightLayout
from trainer.step.async_rollouts import (
    GENERATOR_FAULT_ENV,
    GeneratorFailed,
    GeneratorStalled,
    Produced,
    buffered_share,
    version_for,
)
from trainer.step.generator_process import split_cores
from trainer.step.loop import train
from trainer.step.policy_scoring import importance_weights

# Wall-clock measurements: they differ between runs by nature.
TIMING = {"async/trainer_idle_s", "async/generator_idle_s", "async/generator_busy_s", "async/buffered_steps"}


def _deterministic(metrics: dict[str, float]) -> dict[str, float]:
    return {
        k: v
        for k, v in metrics.items()
        if not k.startswith("perf/") and k not in TIMING and not k.endswith("_latency_s")
    }


def _async(model_dir: Path, out: Path, k: int, steps: int, **training: Any) -> Any:
    return tiny_config(
        model_dir,
        out,
        training={
            "max_steps": steps,
            "prompts_per_step": 2,
            "micro_batch_size": 8,
            "learning_rate": 1e-3,
            "max_off_policy_steps": k,
            **training,
        },
    )


def test_each_step_trains_on_rollouts_exactly_min_k_step_minus_1_versions_old() -> None:
    assert [version_for(s, 2) for s in range(1, 7)] == [0, 0, 0, 1, 2, 3]
    assert [version_for(s, 0) for s in range(1, 4)] == [0, 1, 2]  # k = 0 would be the synchronous loop


def test_importance_weights_are_truncated_and_the_mismatch_is_measured() -> None:
    policy = torch.tensor([[-1.0, -0.5, -2.0, 0.0]])
    sampler = torch.tensor([[-1.0, -1.5, -1.0, float("nan")]])
    mask = torch.tensor([[1, 1, 1, 0]])
    iw = importance_weights(policy, sampler, mask, cap=2.0)
    # ratios 1, e (truncated to 2), 1/e; padding and missing sampler logprobs weigh 1
    assert iw.weights.tolist()[0] == pytest.approx([1.0, 2.0, float(torch.exp(torch.tensor(-1.0))), 1.0])
    assert iw.metrics["async/is_clipped_frac"] == pytest.approx(1 / 3)
    assert iw.metrics["async/is_weight_max"] == pytest.approx(float(torch.exp(torch.tensor(1.0))))
    k3 = [
        0.0,
        float(torch.exp(torch.tensor(1.0))) - 2,
        float(torch.exp(torch.tensor(-1.0))),
    ]  # (r - 1) - log r
    assert iw.metrics["async/sampler_trainer_kl"] == pytest.approx(sum(k3) / 3)
    same = importance_weights(policy, policy, mask, cap=2.0)
    assert same.metrics["async/sampler_trainer_kl"] == 0.0 and same.metrics["async/is_weight_mean"] == 1.0


def test_an_async_run_bounds_staleness_and_corrects_with_importance_weights(
    random_model_dir: Path, tmp_path: Path
) -> None:
    steps = Steps()
    result = train(_async(random_model_dir, tmp_path, k=2, steps=5), sink=steps, log=lambda _: None)
    assert result.status == "succeeded"
    m = [r.metrics for r in steps.reports]
    assert [x["async/staleness"] for x in m] == [0, 1, 2, 2, 2]  # min(k, step - 1)
    assert [x["async/policy_version"] for x in m] == [0, 0, 0, 1, 2]
    assert all(x["async/is_weight_mean"] > 0 and 0 <= x["async/is_clipped_frac"] <= 1 for x in m)
    assert m[0]["async/sampler_trainer_kl"] < 1e-6  # step 1: the sampler is the policy itself
    assert all(
        x["actor/grad_norm"] > 0 for x in m
    )  # the untrained model's digit rewards vary: a gradient each step
    assert m[-1]["async/sampler_trainer_kl"] > max(
        1e-6, m[0]["async/sampler_trainer_kl"]
    )  # 2 updates (lr 1e-3) apart
    assert all(r.details["allocation"]["policy_version"] == 2 for r in steps.reports[-1].rollouts)


def test_async_resume_after_an_interruption_trains_exactly_what_an_uninterrupted_run_trains(
    random_model_dir: Path, tmp_path: Path
) -> None:
    whole = Steps()
    train(_async(random_model_dir, tmp_path / "whole", k=2, steps=6), sink=whole, log=lambda _: None)

    first, second = Steps(), Steps()
    stop_after = 3
    train(
        _async(random_model_dir, tmp_path / "cut", k=2, steps=6),
        sink=first,
        log=lambda _: None,
        should_stop=lambda: len(first.reports) >= stop_after,
    )
    saved = load_state(latest_checkpoint(tmp_path / "cut"))  # type: ignore[arg-type]
    assert saved.step == stop_after
    assert [p.step for p in saved.rollout_buffer or []] == [4, 5]  # generated, not yet trained: kept
    train(
        _async(random_model_dir, tmp_path / "cut", k=2, steps=6),
        sink=second,
        log=lambda _: None,
        resume_from=tmp_path / "cut",
    )

    assert [r.step for r in first.reports + second.reports] == [1, 2, 3, 4, 5, 6]  # none lost, none twice
    for a, b in zip(whole.reports, first.reports + second.reports, strict=True):
        assert _deterministic(b.metrics) == pytest.approx(_deterministic(a.metrics), rel=1e-5, abs=1e-6), (
            a.step
        )
        assert [r.completion for r in a.rollouts] == [r.completion for r in b.rollouts]
    w1 = load_file(str(latest_checkpoint(tmp_path / "whole") / "model.safetensors"))  # type: ignore[operator]
    w2 = load_file(str(latest_checkpoint(tmp_path / "cut") / "model.safetensors"))  # type: ignore[operator]
    assert all(torch.allclose(w1[k], w2[k], atol=1e-6) for k in w1)


@pytest.mark.slow
def test_data_parallel_async_trains_like_one_process_and_resumes_every_ranks_buffer(
    random_model_dir: Path, tmp_path: Path
) -> None:
    """Every rank's generator process produces its share of each step (their own process group all-gathers the
    groups' outcomes, so dynamic sampling and the Beta sampler decide as one process would); a checkpoint holds
    every rank's buffered rollouts and resumes exactly, with the same number of processes only."""

    STEPS = 10  # room for the stop asked after step 2 to land before the end, however fast the steps run

    def config(processes: int, out: Path) -> Any:
        return tiny_config(
            random_model_dir,
            out,
            rollout={"seed_per_prompt": True, "max_completion_length": 6},
            budget={"dynamic_sampling": True, "prompt_sampler": "beta_learnability"},
            training={
                "max_steps": STEPS,
                "prompts_per_step": 4,
                "micro_batch_size": 8,
                "learning_rate": 1e-2,
                "max_off_policy_steps": 2,
                "num_processes": processes,
            },
        )

    one = Steps()
    train(config(1, tmp_path / "one"), sink=one, log=lambda _: None)
    first, second = Steps(), Steps()
    train(
        config(2, tmp_path / "two"),
        sink=first,
        log=lambda _: None,
        should_stop=lambda: len(first.reports) >= 2,
    )
    stopped = load_state(latest_checkpoint(tmp_path / "two"))  # type: ignore[arg-type]
    buffered = [(p.step, p.rank) for p in stopped.rollout_buffer or []]
    ahead = range(stopped.step + 1, min(stopped.step + 2, STEPS) + 1)  # the next k steps, none past max_steps
    assert stopped.step < STEPS and sorted(buffered) == sorted((s, r) for s in ahead for r in (0, 1))
    with pytest.raises(CheckpointError, match=r"generated by 2 process\(es\)"):
        train(config(1, tmp_path / "two"), log=lambda _: None, resume_from=tmp_path / "two")
    train(config(2, tmp_path / "two"), sink=second, log=lambda _: None, resume_from=tmp_path / "two")

    assert [r.step for r in first.reports + second.reports] == list(range(1, STEPS + 1))
    assert max(r.metrics["budget/generation_rounds"] for r in one.reports) > 1  # dynamic sampling refilled
    for a, b in zip(one.reports, first.reports + second.reports, strict=True):
        assert [r.completion for r in b.rollouts] == [r.completion for r in a.rollouts], a.step
        assert b.metrics["async/policy_version"] == a.metrics["async/policy_version"]
        for key in (
            "actor/grad_norm",
            "rollout/reward_mean",
            "budget/prompts_drawn",
            "budget/cumulative_rollouts",
        ):
            assert b.metrics[key] == pytest.approx(a.metrics[key], rel=1e-4, abs=1e-6), (a.step, key)
    w1 = load_file(str(latest_checkpoint(tmp_path / "one") / "model.safetensors"))  # type: ignore[operator]
    w2 = load_file(str(latest_checkpoint(tmp_path / "two") / "model.safetensors"))  # type: ignore[operator]
    assert all(torch.allclose(w1[k], w2[k], atol=1e-3) for k in w1)


def test_a_failing_generator_fails_the_run_with_its_error_and_traceback(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(GENERATOR_FAULT_ENV, "3:raise")
    with pytest.raises(GeneratorFailed, match="the verifier service went away") as failed:
        train(_async(warm_model_dir, tmp_path, k=1, steps=5), log=lambda _: None)
    assert "its traceback ends:" in str(failed.value) and "generator_fault_point" in str(failed.value)
    assert _generator_processes() == []


def test_a_killed_generator_process_fails_the_run_with_its_exit_status(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(GENERATOR_FAULT_ENV, "2:exit")
    with pytest.raises(GeneratorFailed, match="exited with status 3 without an error of its own"):
        train(_async(warm_model_dir, tmp_path, k=1, steps=4), log=lambda _: None)
    assert _generator_processes() == []


def test_a_generator_that_stops_producing_is_noticed_within_the_timeout(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(GENERATOR_FAULT_ENV, "2:hang")
    t0 = time.monotonic()
    with pytest.raises(
        GeneratorStalled, match=r"produced nothing for 10 s .* raise training.generator_timeout_s"
    ):
        train(_async(warm_model_dir, tmp_path, k=1, steps=4, generator_timeout_s=10), log=lambda _: None)
    assert time.monotonic() - t0 < 60
    assert _generator_processes() == []  # the hung process is terminated when the run closes


def test_the_generator_process_gets_its_own_cores_and_gives_them_back(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    """On two or more cores the trainer trains on its share while the run lasts, and has every core (and its
    torch threads) back when it ends."""
    cores, threads = os.sched_getaffinity(0), torch.get_num_threads()
    seen: list[set[int]] = []

    class Watch(Steps):
        def on_step(self, report: Any) -> None:
            seen.append(os.sched_getaffinity(0))
            super().on_step(report)

    logs: list[str] = []
    train(_async(warm_model_dir, tmp_path, k=1, steps=2), sink=Watch(), log=logs.append)
    split = split_cores(sorted(cores))
    if split is not None:
        assert seen == [set(split[0])] * 2
        assert f"on core(s) {split[1]}, training on {split[0]}" in "\n".join(logs)
    assert os.sched_getaffinity(0) == cores and torch.get_num_threads() == threads
    assert _generator_processes() == []


def test_cores_are_split_one_for_the_generator_on_two_then_half_and_per_local_rank() -> None:
    assert split_cores([0, 1]) == ([1], [0])
    assert split_cores([4, 2, 3]) == ([3, 4], [2])
    assert split_cores(list(range(8))) == ([4, 5, 6, 7], [0, 1, 2, 3])
    assert split_cores(list(range(8)), 1, 2) == ([6, 7], [4, 5])  # rank 1 of 2 on the host: cores 4-7
    assert split_cores([0]) is None and split_cores([0, 1, 2], 0, 2) is None  # too few to give each its own


def test_weights_cross_to_another_process_exactly_through_shared_memory() -> None:
    state = {
        "w": torch.randn(3, 5),
        "half": torch.randn(7).to(torch.bfloat16),
        "steps": torch.arange(3),
        "flag": torch.tensor([True, False]),
        "t": torch.randn(4, 2).t(),  # not contiguous
    }
    layout = WeightLayout.of(state)
    fd = layout.pack(state)
    child_fd = os.dup(fd)  # what the receiving process gets through the socket
    os.close(fd)
    got = layout.unpack(layout.open(child_fd))
    assert got.keys() == state.keys()
    assert all(torch.equal(got[k], state[k]) and got[k].dtype == state[k].dtype for k in state)
    with pytest.raises(ValueError, match="entries changed"):
        layout.pack({"w": state["w"]})


def test_a_checkpoint_resumes_only_with_the_processes_that_buffered_its_rollouts() -> None:
    def produced(step: int, rank: int, processes: int) -> Produced:
        return Produced(step, 0, None, {}, torch.zeros(1), 0.0, 0.0, rank=rank, processes=processes)  # type: ignore[arg-type]

    saved = [produced(s, r, 2) for r in (0, 1) for s in (4, 5)]
    assert [(p.step, p.rank) for p in buffered_share(saved, DistContext(1, 2))] == [(4, 1), (5, 1)]
    with pytest.raises(CheckpointError, match=r"generated by 2 process.*training.num_processes 1"):
        buffered_share(saved, None)
    assert buffered_share([], DistContext(0, 2)) == []


def test_async_refuses_what_it_cannot_run(warm_model_dir: Path, tmp_path: Path) -> None:
    data_parallel = {"max_off_policy_steps": 1, "num_processes": 2}
    tiny_config(
        warm_model_dir, tmp_path, training=data_parallel
    )  # the hf engine: every rank its own generator
    with pytest.raises(ConfigError, match=r"max_off_policy_steps > 0 with rollout.engine .vllm."):
        tiny_config(
            warm_model_dir,
            tmp_path,
            training=data_parallel,
            rollout={"engine": "vllm", "vllm_mode": "server"},
        )
    with pytest.raises(ConfigError, match="whole copy of the policy on every process"):
        tiny_config(warm_model_dir, tmp_path, training={**data_parallel, "fsdp": True})


def _generator_processes() -> list[int]:
    """This process's children that are generator processes (none may outlive a run)."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"trainer.step.generator_process" in cmdline:
            found.append(int(entry.name))
    return found
