"""Cue-GRPO rarity-aware redistribution: mass preserved per group, rare clusters get more, by hand."""

import pytest
import torch

from trainer.config import ExperimentConfig, ShapingConfig
from trainer.methods.rarity import RarityParams, rarity_advantages, redistribute_by_rarity, strategy_cues

ADV = torch.tensor([1.0, 1.0, 1.0, -3.0])
CORRECT = [True, True, True, False]
CUES = ["a", "a", "b", "x"]


def rarity(**params: object) -> RarityParams:
    """The rarity params as the config validates them (shaping.advantage_shaping: [{name: rarity, params}])."""
    chosen = ShapingConfig(advantage_shaping=[{"name": "rarity", "params": params}]).advantage_shaping
    assert [c.name for c in chosen] == ["rarity"]
    return chosen[0].params


def test_rare_cluster_gets_more_and_group_positive_mass_is_preserved() -> None:
    new, metrics = redistribute_by_rarity(ADV, CUES, CORRECT, [0, 0, 0, 0])
    # M = 3, K = 2 clusters: each gets 1.5; cluster a (2 members) 0.75 each, cluster b (1 member) 1.5.
    assert new.tolist() == pytest.approx([0.75, 0.75, 1.5, -3.0])
    assert float(new[:3].sum()) == pytest.approx(3.0)
    assert metrics["rarity/clusters_mean"] == 2.0 and metrics["rarity/groups_redistributed"] == 1.0
    assert metrics["rarity/moved_mass_frac"] == pytest.approx(0.5 / 3)


def test_strength_blends_plain_and_redistributed_advantages() -> None:
    new, _ = redistribute_by_rarity(ADV, CUES, CORRECT, [0, 0, 0, 0], strength=0.5)
    assert new.tolist() == pytest.approx([0.875, 0.875, 1.25, -3.0])


def test_one_cluster_changes_nothing() -> None:
    new, metrics = redistribute_by_rarity(ADV, ["a", "a", "a", "x"], CORRECT, [0, 0, 0, 0])
    assert torch.equal(new, ADV) and metrics["rarity/groups_redistributed"] == 0.0


def test_only_correct_completions_with_positive_advantage_take_part() -> None:
    adv = torch.tensor([2.0, 0.0, 1.0, 1.0, 1.0])
    # index 1 is correct but has advantage 0 and index 4 is wrong: neither counts nor changes.
    # Positive set {0, 2} (cue a) and {3} (cue b), M = 4; A / n_c = 1, 0.5, 1 -> scale 4 / 2.5 = 1.6.
    new, _ = redistribute_by_rarity(adv, ["a", "a", "a", "b", "b"], [True, True, True, True, False], [0] * 5)
    assert new.tolist() == pytest.approx([1.6, 0.0, 0.8, 1.6, 1.0])
    assert float(new[[0, 2, 3]].sum()) == pytest.approx(4.0)


def test_groups_are_redistributed_separately() -> None:
    adv = torch.tensor([1.0, 1.0, 1.0, 2.0, 2.0, -1.0])
    cues = ["a", "a", "b", "a", "b", "c"]
    correct = [True, True, True, True, True, False]
    new, metrics = redistribute_by_rarity(adv, cues, correct, [0, 0, 0, 1, 1, 1])
    assert new.tolist() == pytest.approx([0.75, 0.75, 1.5, 2.0, 2.0, -1.0])
    assert metrics["rarity/clusters_mean"] == 2.0


def test_answer_form_cue_is_the_surface_form_of_the_extracted_answer() -> None:
    sh = rarity(cue="answer_form", answer_extract="boxed")
    cues = strategy_cues(["\\boxed{1/2}", "so \\boxed{ 1 / 2 }", "\\boxed{0.5}", "none"], sh)
    assert cues == ["1/2", "1/2", "0.5", ""]


def test_completion_and_regex_cues() -> None:
    sh = rarity(cue="completion")
    assert strategy_cues(["a  b\n", "a b"], sh) == ["a b", "a b"]
    sh = rarity(cue="regex", cue_pattern="(?i)induction|modulo")
    assert strategy_cues(["By Induction and modulo, induction", "Modulo only", "plain"], sh) == [
        "induction|modulo",
        "modulo",
        "",
    ]


def test_rarity_advantages_is_off_unless_enabled() -> None:
    # Off by default: no advantage_shaping method is chosen, so the step runs no advantage_shaping hook.
    assert ShapingConfig().advantage_shaping == []
    assert not [m for m in ExperimentConfig().methods() if m.hook("advantage_shaping") is not None]
    sh = rarity(cue="completion")
    new, _ = rarity_advantages(
        torch.tensor([1.0, 1.0, 1.0]), ["x", "x", "y"], [True] * 3, torch.tensor([0, 0, 0]), sh
    )
    assert new.tolist() == pytest.approx([0.75, 0.75, 1.5])
