"""Bradley-Terry reward-model training: the loss and its gradient by hand, the held-out split, determinism, learning a
preference on a tiny model, the saved folder (scored by the reward_model verifier), and stopping."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from trainer.errors import DataError
from trainer.rewards.bradley_terry import (
    METADATA_FILE,
    RMProgress,
    RMTrainingStopped,
    bradley_terry_loss,
    split_by_prompt,
    train_reward_model,
)
from trainer.rewards.bt_config import RMTrainingConfig
from trainer.rewards.pairs import PreferencePair
from trainer.samples import Sample
from trainer.verifiers.base import build_verifier


def _sum_pairs(n: int, seed: int = 0) -> list[PreferencePair]:
    """Chosen: the right sum; rejected: a wrong sum followed by '?' (learnable from the last character)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        a, b = rng.randint(0, 60), rng.randint(0, 60)
        pairs.append(PreferencePair(f"{a}+{b}=", f"{a + b}", f"{a + b + rng.randint(1, 9)}?"))
    return pairs


def _config(model_dir: Path, out: Path, **overrides: object) -> RMTrainingConfig:
    values: dict[str, object] = dict(
        base_model=str(model_dir), output_dir=str(out), learning_rate=3e-3, epochs=2, batch_size=16,
        micro_batch_size=8, max_length=32, held_out_frac=0.2, eval_every=5, device="cpu",
    )  # fmt: skip
    values.update(overrides)
    return RMTrainingConfig.model_validate(values)


def test_the_loss_is_log_2_at_a_tie_and_its_gradient_is_minus_sigmoid_of_minus_the_gap() -> None:
    r_c = torch.tensor([0.0, 2.0], requires_grad=True)
    r_r = torch.tensor([0.0, 0.5], requires_grad=True)
    loss = bradley_terry_loss(r_c, r_r)
    expected = (math.log(2) + math.log1p(math.exp(-1.5))) / 2
    assert float(loss.detach()) == pytest.approx(expected, abs=1e-6)
    loss.backward()
    sig = [0.5, 1 / (1 + math.exp(1.5))]  # sigmoid(-(r_c - r_r))
    assert r_c.grad is not None and r_r.grad is not None
    assert r_c.grad.tolist() == pytest.approx([-s / 2 for s in sig], abs=1e-6)
    assert r_r.grad.tolist() == pytest.approx([s / 2 for s in sig], abs=1e-6)


def test_the_margin_and_the_centring_term_follow_trls_formulas() -> None:
    r_c, r_r = torch.tensor([1.0]), torch.tensor([0.5])
    assert float(bradley_terry_loss(r_c, r_r, margin=0.5)) == pytest.approx(math.log(2), abs=1e-6)
    centred = float(bradley_terry_loss(r_c, r_r, center=0.1))
    assert centred == pytest.approx(math.log1p(math.exp(-0.5)) + 0.1 * 1.5**2, abs=1e-6)


def test_the_held_out_split_keeps_every_prompt_on_one_side() -> None:
    pairs = [PreferencePair(f"p{i % 10}", f"c{i}", f"r{i}") for i in range(50)]
    train, held = split_by_prompt(pairs, 0.2, seed=3)
    assert {p.prompt for p in train}.isdisjoint({p.prompt for p in held})
    assert len({p.prompt for p in held}) == 2 and len(train) + len(held) == 50
    assert split_by_prompt(pairs, 0.2, seed=3) == (train, held)
    assert split_by_prompt(pairs, 0.0, seed=3) == (pairs, [])


def test_a_causal_lm_gets_a_scalar_head_and_learns_the_preference(
    random_model_dir: Path, tmp_path: Path
) -> None:
    seen: list[RMProgress] = []
    result = train_reward_model(
        _config(random_model_dir, tmp_path / "rm"), _sum_pairs(160), on_progress=seen.append
    )
    assert result.steps == seen[-1].step == seen[-1].total == 2 * math.ceil(result.train_pairs / 16)
    assert result.held_out_pairs > 0 and result.initial_held_out_accuracy is not None
    assert result.held_out_accuracy is not None and result.held_out_accuracy >= 0.9
    assert result.held_out_accuracy > result.initial_held_out_accuracy
    measured = [p.held_out_accuracy for p in seen if p.held_out_accuracy is not None]
    assert len(measured) == len([p for p in seen if p.step % 5 == 0 or p.step == p.total])
    assert seen[-1].loss < seen[0].loss


def test_training_is_deterministic_for_a_seed(random_model_dir: Path, tmp_path: Path) -> None:
    pairs = _sum_pairs(48)
    runs = [
        train_reward_model(_config(random_model_dir, tmp_path / name, epochs=1, seed=seed), pairs)
        for name, seed in (("a", 0), ("b", 0), ("c", 1))
    ]
    weights = [load_file(str(Path(r.output_dir) / "model.safetensors")) for r in runs]
    assert runs[0].final_loss == runs[1].final_loss
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not torch.equal(weights[0]["score.weight"], weights[2]["score.weight"])


def test_the_saved_folder_records_its_data_and_scores_as_a_reward_model_verifier(
    random_model_dir: Path, tmp_path: Path
) -> None:
    pairs = _sum_pairs(160)
    result = train_reward_model(_config(random_model_dir, tmp_path / "rm"), pairs)
    folder = Path(result.output_dir)
    meta = json.loads((folder / METADATA_FILE).read_text())
    assert meta["base_model"] == str(random_model_dir) and meta["seed"] == 0
    assert meta["data_hash"] == result.data_hash and meta["train_pairs"] + meta["held_out_pairs"] == 160
    assert meta["held_out_accuracy"] == result.held_out_accuracy and "torch" in meta["versions"]
    assert not (tmp_path / "rm.partial").exists()
    verifier = build_verifier(
        "reward_model", {"model": str(folder), "input_format": "plain", "max_length": 32}
    )
    load = getattr(verifier, "load", None)
    if load is not None:
        load()
    held = [p for p in _sum_pairs(40, seed=9)]
    samples = [Sample(f"s{i}", p.prompt, None, {}) for i, p in enumerate(held)]
    chosen = verifier([p.chosen for p in held], samples)
    rejected = verifier([p.rejected for p in held], samples)
    wins = sum(c.reward > r.reward for c, r in zip(chosen, rejected, strict=True))
    assert wins >= 36


def test_a_stop_request_ends_training_and_saves_nothing(random_model_dir: Path, tmp_path: Path) -> None:
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(RMTrainingStopped, match="stopped at step 2"):
        train_reward_model(_config(random_model_dir, tmp_path / "rm"), _sum_pairs(80), should_stop=stop)
    assert not (tmp_path / "rm").exists()


def test_no_training_pairs_is_a_clear_error(random_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no training pairs"):
        train_reward_model(_config(random_model_dir, tmp_path / "rm"), [])


def test_every_hyper_parameter_is_bounded() -> None:
    with pytest.raises(ValueError, match="held_out_frac"):
        RMTrainingConfig(base_model="tiny:chain", output_dir="x", held_out_frac=0.9)
    with pytest.raises(ValueError, match="learning_rate"):
        RMTrainingConfig(base_model="tiny:chain", output_dir="x", learning_rate=float("nan"))
