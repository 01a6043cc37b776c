"""Layer 1: each Tinker loss against its documented formula on hand-computed tiny tensors, values and gradients."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.training_api.limits import LOSS_CONFIG_DEFAULTS, SUPPORTED_LOSSES
from trainer.training_api.losses import TINKER_LOSSES

# Two tokens: logp = log 0.5 and log 0.25 under the learner, the sampler gave log 0.25 and log 0.5
# (ratios 2 and 0.5), advantages +1 and -2.
LOGP = [math.log(0.5), math.log(0.25)]
Q = [math.log(0.25), math.log(0.5)]
ADV = [1.0, -2.0]


def _inputs(**extra: list[float]) -> dict[str, torch.Tensor]:
    base = {"logprobs": torch.tensor([Q]), "advantages": torch.tensor([ADV])}
    base.update({k: torch.tensor([v]) for k, v in extra.items()})
    return base


def _loss(
    name: str, config: dict[str, float] | None = None, **extra: list[float]
) -> tuple[list[float], list[float]]:
    logp = torch.tensor([LOGP], requires_grad=True)
    cfg = {**LOSS_CONFIG_DEFAULTS[name], **(config or {})}
    per_token = TINKER_LOSSES.get(name)(logp, _inputs(**extra), cfg)
    per_token.sum().backward()
    assert logp.grad is not None
    return per_token[0].tolist(), logp.grad[0].tolist()


def test_the_registry_computes_exactly_the_supported_losses() -> None:
    assert sorted(TINKER_LOSSES.names()) == sorted(SUPPORTED_LOSSES)


def test_cross_entropy_is_the_weighted_negative_log_likelihood() -> None:
    values, grads = _loss("cross_entropy", weights=[1.0, 0.5])
    assert values == pytest.approx([-math.log(0.5), -0.5 * math.log(0.25)])
    assert grads == pytest.approx([-1.0, -0.5])


def test_importance_sampling_weighs_the_advantage_by_the_ratio() -> None:
    values, grads = _loss("importance_sampling")
    assert values == pytest.approx([-2.0 * 1.0, -0.5 * -2.0])  # -r A
    assert grads == pytest.approx([-2.0 * 1.0, -0.5 * -2.0])  # d(-r A)/dlogp = -r A


def test_ppo_clips_the_ratio_at_the_thresholds_and_drops_the_clipped_gradient() -> None:
    values, grads = _loss("ppo")
    # token 0: r=2, A=1: min(2, 1.2) = 1.2, clipped -> no gradient; token 1: r=0.5, A=-2: min(-1, -1.6) = -1.6,
    # the clipped branch is the minimum as well (r < 0.8 with A < 0) -> no gradient.
    assert values == pytest.approx([-1.2, 1.6])
    assert grads == pytest.approx([0.0, 0.0])


def test_ppo_keeps_the_gradient_inside_wide_thresholds() -> None:
    values, grads = _loss("ppo", {"clip_low_threshold": 0.1, "clip_high_threshold": 3.0})
    assert values == pytest.approx([-2.0, 1.0])
    assert grads == pytest.approx([-2.0, 1.0])


def test_cispo_weighs_the_log_likelihood_gradient_by_the_clipped_ratio_without_differentiating_it() -> None:
    values, grads = _loss("cispo", {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2})
    # -sg(clip(r)) logp A: token 0: -1.2 * log 0.5 * 1; token 1: -0.8 * log 0.25 * -2
    assert values == pytest.approx([-1.2 * math.log(0.5), 0.8 * 2 * math.log(0.25)])
    assert grads == pytest.approx([-1.2, 1.6])  # the clipped ratio is a constant: gradient -clip(r) A


def test_cispo_defaults_leave_these_ratios_unclipped() -> None:
    _, grads = _loss("cispo")  # thresholds 0 and 4
    assert grads == pytest.approx([-2.0, 1.0])


def test_dro_adds_half_beta_times_the_squared_log_ratio() -> None:
    beta = 0.5
    values, grads = _loss("dro", {"beta": beta})
    d = [LOGP[0] - Q[0], LOGP[1] - Q[1]]  # log 2, -log 2
    assert values == pytest.approx([-(LOGP[t] * ADV[t] - 0.5 * beta * d[t] ** 2) for t in range(2)])
    assert grads == pytest.approx([-(ADV[t] - beta * d[t]) for t in range(2)])
