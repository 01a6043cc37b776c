"""Verifier + teacher fusion modes (METHODS.md section 5) on hand-computed tensors."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.config import TeacherConfig
from trainer.methods.fusion import FUSIONS, fuse_rewards, fuse_token_advantages, fusion_acts
from trainer.step.teacher import TeacherSignals

GAP = torch.tensor([[1.0, -1.0, 0.0], [2.0, 2.0, 2.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])


def signals(gap: torch.Tensor = GAP, mask: torch.Tensor = MASK) -> TeacherSignals:
    student = torch.full_like(gap, -1.5) * mask
    return TeacherSignals(
        logprob=(student + gap) * mask,
        entropy=torch.zeros_like(gap),
        gap=gap * mask,
        mask=mask,
        vocab_size=10,
    )


def teacher(fusion: str, **params: object) -> TeacherConfig:
    return TeacherConfig(name_or_path="some/teacher", fusion={"name": fusion, "params": params})


VERIFIER_TOKENS = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])


def test_opd_replaces_the_verifier_advantage_by_the_scaled_teacher_gap() -> None:
    out = fuse_token_advantages(VERIFIER_TOKENS, MASK, signals(), teacher("opd", coef=2.0), step=1)
    assert out.tolist() == [[2.0, -2.0, 0.0], [4.0, 4.0, 4.0]]


def test_opd_gives_no_advantage_to_tokens_outside_the_loss_mask() -> None:
    loss_mask = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    out = fuse_token_advantages(VERIFIER_TOKENS, loss_mask, signals(), teacher("opd"), step=1)
    assert out.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_additive_fusion_adds_lambda_times_the_gap() -> None:
    out = fuse_token_advantages(VERIFIER_TOKENS, MASK, signals(), teacher("additive", coef=0.5), step=1)
    assert out.tolist() == [[1.5, 0.5, 0.0], [0.0, 0.0, 0.0]]


def test_modulated_fusion_rescales_by_the_teacher_ratio_in_the_direction_of_the_advantage() -> None:
    cfg = teacher("modulated", strength=0.5, max=2.0)
    out = fuse_token_advantages(VERIFIER_TOKENS, MASK, signals(), cfg, step=1)
    e = math.exp(0.5)
    # row 0, A > 0: w = exp(+0.5 gap) = [e, 1/e]; row 1, A < 0: w = exp(-0.5 * 2) = 1/e^2 -> clamped to 1/2
    expected = torch.tensor([[e, 1 / e, 0.0], [-0.5, -0.5, -0.5]])
    assert torch.allclose(out, expected)


def test_modulated_fusion_never_flips_a_sign() -> None:
    g = torch.Generator().manual_seed(1)
    gap = torch.randn(4, 6, generator=g) * 5
    adv = torch.randn(4, 6, generator=g)
    out = fuse_token_advantages(
        adv, torch.ones(4, 6), signals(gap, torch.ones(4, 6)), teacher("modulated"), 1
    )
    assert torch.all(torch.sign(out) == torch.sign(adv))
    assert torch.all((out / adv).abs() <= 2.0 + 1e-6) and torch.all((out / adv).abs() >= 0.5 - 1e-6)


def test_puu_adds_the_length_normalised_teacher_score_before_normalisation() -> None:
    rewards = torch.tensor([1.0, 0.0])
    # row 0: mean of the 2 real tokens' gaps (1 - 1) / 2 = 0; row 1: (2 + 2 + 2) / 3 = 2
    out = fuse_rewards(rewards, signals(), teacher("puu", coef=0.1), step=1)
    assert torch.allclose(out, torch.tensor([1.0, 0.2]))


def test_puu_leaves_token_advantages_and_other_modes_leave_rewards_alone() -> None:
    rewards = torch.tensor([1.0, 0.0])
    for mode in ("opd", "additive", "modulated", "none"):
        assert torch.equal(fuse_rewards(rewards, signals(), teacher(mode), step=1), rewards)
    out = fuse_token_advantages(VERIFIER_TOKENS, MASK, signals(), teacher("puu"), step=1)
    assert torch.equal(out, VERIFIER_TOKENS)


def test_opd_then_rl_switches_to_the_verifier_after_the_configured_step() -> None:
    cfg = teacher("opd", until_step=3)
    assert [fusion_acts(cfg, s) for s in (1, 3, 4, 10)] == [True, True, False, False]
    assert torch.equal(fuse_token_advantages(VERIFIER_TOKENS, MASK, signals(), cfg, step=4), VERIFIER_TOKENS)
    assert not torch.equal(
        fuse_token_advantages(VERIFIER_TOKENS, MASK, signals(), cfg, step=3), VERIFIER_TOKENS
    )


def test_without_teacher_signals_every_stage_is_the_identity() -> None:
    cfg = teacher("additive")
    assert torch.equal(fuse_token_advantages(VERIFIER_TOKENS, MASK, None, cfg, step=1), VERIFIER_TOKENS)
    assert torch.equal(fuse_rewards(torch.tensor([1.0]), None, cfg, step=1), torch.tensor([1.0]))


def test_the_schema_offers_exactly_the_registered_fusion_modes() -> None:
    from trainer.config import config_schema

    schema = config_schema()
    fusion = schema["$defs"]["TeacherConfig"]["properties"]["fusion"]
    assert [c["name"] for c in fusion["x-choices"]] == [
        "none",
        "additive",
        "modulated",
        "opd",
        "puu",
    ]  # default first
    assert FUSIONS.names() == ["additive", "modulated", "none", "opd", "puu"]


def test_an_unknown_fusion_name_lists_the_valid_ones() -> None:
    from trainer.errors import ConfigError

    with pytest.raises(ConfigError, match="additive, modulated, none, opd, puu"):
        FUSIONS.get("magic")
