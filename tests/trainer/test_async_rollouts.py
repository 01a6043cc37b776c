"""Asynchronous RL (training.max_off_policy_steps): the staleness bound, importance weights, exact resume,
and a generator that fails or stalls."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.errors import ConfigError
from trainer.models.checkpoint import latest_checkpoint, load_state
from trainer.step import async_rollouts
from trainer.step.async_rollouts import GeneratorStalled, version_for
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
    warm_model_dir: Path, tmp_path: Path
) -> None:
    steps = Steps()
    result = train(_async(warm_model_dir, tmp_path, k=2, steps=5), sink=steps, log=lambda _: None)
    assert result.status == "succeeded"
    m = [r.metrics for r in steps.reports]
    assert [x["async/staleness"] for x in m] == [0, 1, 2, 2, 2]  # min(k, step - 1)
    assert [x["async/policy_version"] for x in m] == [0, 0, 0, 1, 2]
    assert all(x["async/is_weight_mean"] > 0 and 0 <= x["async/is_clipped_frac"] <= 1 for x in m)
    assert m[0]["async/sampler_trainer_kl"] < 1e-6  # step 1: the sampler is the policy itself
    assert m[-1]["async/sampler_trainer_kl"] > m[0]["async/sampler_trainer_kl"]  # 2 updates (lr 1e-3) apart
    assert all(r.details["allocation"]["policy_version"] == 2 for r in steps.reports[-1].rollouts)


def test_async_resume_after_an_interruption_trains_exactly_what_an_uninterrupted_run_trains(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    whole = Steps()
    train(_async(warm_model_dir, tmp_path / "whole", k=2, steps=6), sink=whole, log=lambda _: None)

    first, second = Steps(), Steps()
    stop_after = 3
    train(
        _async(warm_model_dir, tmp_path / "cut", k=2, steps=6),
        sink=first,
        log=lambda _: None,
        should_stop=lambda: len(first.reports) >= stop_after,
    )
    saved = load_state(latest_checkpoint(tmp_path / "cut"))  # type: ignore[arg-type]
    assert saved.step == stop_after
    assert [p.step for p in saved.rollout_buffer or []] == [4, 5]  # generated, not yet trained: kept
    train(
        _async(warm_model_dir, tmp_path / "cut", k=2, steps=6),
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


def test_a_failing_generator_fails_the_run_with_its_error(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = async_rollouts.collect_rollouts

    def broken(run: Any, step: int) -> Any:
        if step == 3:
            raise RuntimeError("the verifier service went away")
        return real(run, step)

    monkeypatch.setattr(async_rollouts, "collect_rollouts", broken)
    with pytest.raises(RuntimeError, match="the verifier service went away"):
        train(_async(warm_model_dir, tmp_path, k=1, steps=5), log=lambda _: None)


def test_a_generator_that_stops_producing_is_noticed_within_the_timeout(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = async_rollouts.collect_rollouts

    def stuck(run: Any, step: int) -> Any:
        if step == 2:
            time.sleep(60)
        return real(run, step)

    monkeypatch.setattr(async_rollouts, "collect_rollouts", stuck)
    t0 = time.monotonic()
    with pytest.raises(
        GeneratorStalled, match=r"produced nothing for 10 s .* raise training.generator_timeout_s"
    ):
        train(_async(warm_model_dir, tmp_path, k=1, steps=4, generator_timeout_s=10), log=lambda _: None)
    assert time.monotonic() - t0 < 45


def test_async_refuses_what_it_cannot_run(warm_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max_off_policy_steps > 0"):
        tiny_config(warm_model_dir, tmp_path, training={"max_off_policy_steps": 1, "num_processes": 2})
