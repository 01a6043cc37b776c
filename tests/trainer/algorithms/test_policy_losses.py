"""The clipped surrogate per token (with clip-higher) and per sequence (GSPO), by hand."""

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.methods import POLICY_LOSSES

CFG = AlgorithmConfig(epsilon=0.2, epsilon_high=0.28)


def test_ratio_one_gives_minus_advantage() -> None:
    logp = torch.tensor([[-1.0, -2.0]])
    adv = torch.tensor([[0.5, -1.5]])
    out = POLICY_LOSSES.get("token")(logp, logp, adv, torch.ones(1, 2), CFG)
    assert out.per_token_loss[0].tolist() == pytest.approx([-0.5, 1.5])
    assert not out.clipped.any()


def test_positive_advantage_is_clipped_at_one_plus_epsilon_high() -> None:
    old = torch.tensor([[0.0]])
    logp = torch.tensor([[math.log(1.5)]])  # ratio 1.5 > 1.28
    out = POLICY_LOSSES.get("token")(logp, old, torch.tensor([[2.0]]), torch.ones(1, 1), CFG)
    assert out.per_token_loss.item() == pytest.approx(-1.28 * 2.0)
    assert out.clipped.all()


def test_negative_advantage_is_clipped_at_one_minus_epsilon() -> None:
    old = torch.tensor([[0.0]])
    logp = torch.tensor([[math.log(0.5)]])  # ratio 0.5 < 0.8
    out = POLICY_LOSSES.get("token")(logp, old, torch.tensor([[-1.0]]), torch.ones(1, 1), CFG)
    # -min(0.5 * -1, 0.8 * -1) = -(-0.8) = 0.8
    assert out.per_token_loss.item() == pytest.approx(0.8)
    assert out.clipped.all()


def test_unclipped_side_keeps_the_raw_ratio() -> None:
    old = torch.tensor([[0.0]])
    logp = torch.tensor([[math.log(0.5)]])  # ratio 0.5 with positive advantage: min picks 0.5 * A
    out = POLICY_LOSSES.get("token")(logp, old, torch.tensor([[1.0]]), torch.ones(1, 1), CFG)
    assert out.per_token_loss.item() == pytest.approx(-0.5)
    assert not out.clipped.any()


def test_gspo_uses_the_length_normalised_sequence_ratio() -> None:
    old = torch.zeros(1, 3)
    logp = torch.tensor([[0.1, 0.2, 9.0]])  # third token is padding
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = POLICY_LOSSES.get("sequence")(logp, old, torch.tensor([[1.0, 1.0, 0.0]]), mask, CFG)
    s = math.exp(0.15)  # geometric mean of the two real tokens' ratios
    assert out.ratio.shape == (1, 1)
    assert out.ratio.item() == pytest.approx(s, rel=1e-6)
    assert out.per_token_loss[0, :2].tolist() == pytest.approx([-s, -s], rel=1e-6)


def test_gspo_gradient_reaches_every_real_token() -> None:
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    out = POLICY_LOSSES.get("sequence")(logp, logp.detach(), torch.ones(1, 2), torch.ones(1, 2), CFG)
    out.per_token_loss.sum().backward()
    assert logp.grad is not None and torch.all(logp.grad != 0)
