"""Training a scalar reward model from preference pairs with the Bradley-Terry loss.

The Bradley-Terry model (Bradley & Terry, 1952, "Rank Analysis of Incomplete Block Designs") says the
chance that ``chosen`` beats ``rejected`` is sigmoid(r(chosen) - r(rejected)); fitting r by maximum
likelihood gives the loss -log sigmoid(r_c - r_r), as in reward modelling for RLHF (Stiennon et al. 2020,
"Learning to summarize from human feedback"; Ouyang et al. 2022, "Training language models to follow
instructions with human feedback" (InstructGPT)). TRL's ``RewardTrainer`` implements the same loss with an
optional per-pair ``margin`` (Llama 2's margin loss) and the ``center_rewards_coefficient`` auxiliary loss
(Eisenstein et al. 2023, "Helping or Herding? Reward Model Ensembles Mitigate but do not Eliminate Reward
Hacking"), both kept here under the same names.

How ours differs from TRL's RewardTrainer:
- the margin is one number for every pair (TRL reads a per-row ``margin`` column);
- held-out pairs are split off by prompt (no prompt is in both sets), and the held-out pairwise accuracy
  (ties count half) is measured every ``eval_every`` steps and reported live to ``on_progress``;
- a plain loop (no ``Trainer``): the worker's cancel flag is read through ``should_stop`` every step;
- the input is ``prompt + completion`` as plain text, no chat template and no special tokens added,
  truncated from the left so the completion's end (where the score is read) is always kept. The scoring
  verifier (trainer/verifiers/reward_model.py) must build the same text; ``rlvr_reward_model.json`` says so.

The same code trains a 7B RM on a GPU: ``device: auto`` picks it, ``bf16`` autocasts the forward pass there
(trainer/models/device.py), ``gradient_checkpointing`` trades compute for memory, and ``micro_batch_size``
accumulates gradients over a batch.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from trainer.errors import DataError, RLVRError
from trainer.models.device import autocast, resolve_device
from trainer.models.tiny_model import resolve_model_path
from trainer.rewards.bt_config import RMTrainingConfig
from trainer.rewards.pairs import PreferencePair, pairs_hash

METADATA_FILE = "rlvr_reward_model.json"
INPUT_FORMAT = "prompt + completion as plain text; no special tokens added; truncated from the left"


@dataclass(frozen=True)
class RMProgress:
    """What ``on_progress`` receives after each step."""

    step: int
    total: int
    loss: float
    held_out_accuracy: float | None  # set on the steps that measured it
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        return None if self.step <= 0 else self.elapsed_s / self.step * max(0, self.total - self.step)


@dataclass(frozen=True)
class RMTrainingResult:
    output_dir: str
    steps: int
    train_pairs: int
    held_out_pairs: int
    held_out_accuracy: float | None
    initial_held_out_accuracy: float | None
    final_loss: float
    seconds: float
    data_hash: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class RMTrainingStopped(RLVRError):
    """``should_stop`` answered True: training stopped before its last step and nothing was saved."""


def split_by_prompt(
    pairs: Sequence[PreferencePair], held_out_frac: float, seed: int
) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """(train, held-out): the pairs of a seeded ``held_out_frac`` share of the distinct prompts are held out,
    so no prompt is in both. With one prompt, or a share that rounds to none, nothing is held out."""
    prompts = sorted({p.prompt for p in pairs})
    random.Random(f"split:{seed}").shuffle(prompts)
    n_held = min(len(prompts) - 1, math.ceil(held_out_frac * len(prompts))) if held_out_frac > 0 else 0
    held = set(prompts[: max(0, n_held)])
    return [p for p in pairs if p.prompt not in held], [p for p in pairs if p.prompt in held]


def load_reward_model(
    path: str, device: torch.device | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A scalar-head model and its tokenizer from ``path`` (pad token set; right padding, left truncation)."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side, tokenizer.truncation_side = "right", "left"
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    # The head reads the last token that is not padding: it must know which id pads.
    model.config.pad_token_id = tokenizer.pad_token_id
    if device is not None:
        model.to(device)  # type: ignore[arg-type]
    return model, tokenizer


def score_texts(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    max_length: int,
    bf16: bool = False,
) -> Tensor:
    """The scalar reward of each text, [N] float32 (no gradient when called under ``torch.no_grad``)."""
    device = next(model.parameters()).device
    enc = tokenizer(
        list(texts), return_tensors="pt", padding=True, truncation=True, max_length=max_length,
        add_special_tokens=False,
    )  # fmt: skip
    with autocast(device, bf16):
        out = model(input_ids=enc["input_ids"].to(device), attention_mask=enc["attention_mask"].to(device))
    return out.logits[:, 0].float()  # [N]


def pairwise_accuracy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    pairs: Sequence[PreferencePair],
    config: RMTrainingConfig,
) -> float | None:
    """Share of pairs whose chosen text scores above the rejected one (ties count half); None without pairs."""
    if not pairs:
        return None
    was_training = model.training
    model.eval()
    wins = 0.0
    try:
        with torch.no_grad():
            for start in range(0, len(pairs), config.micro_batch_size):
                chunk = pairs[start : start + config.micro_batch_size]
                r_c, r_r = _pair_rewards(model, tokenizer, chunk, config)
                wins += float((r_c > r_r).sum() + 0.5 * (r_c == r_r).sum())
    finally:
        model.train(was_training)
    return wins / len(pairs)


def bradley_terry_loss(
    r_chosen: Tensor, r_rejected: Tensor, margin: float = 0.0, center: float = 0.0
) -> Tensor:
    """-log sigmoid(r_c - r_r - margin), averaged, plus ``center`` x mean((r_c + r_r)^2) (TRL's form).

    >>> round(float(bradley_terry_loss(torch.tensor([0.0]), torch.tensor([0.0]))), 4)  # log 2
    0.6931
    """
    loss = -F.logsigmoid(r_chosen - r_rejected - margin).mean()
    if center > 0:
        loss = loss + center * ((r_chosen + r_rejected) ** 2).mean()
    return loss


def train_reward_model(
    config: RMTrainingConfig,
    pairs: Sequence[PreferencePair],
    on_progress: Callable[[RMProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RMTrainingResult:
    """Fit a scalar head (and the body) on ``pairs`` and save it to ``config.output_dir``; deterministic for a
    seed on a CPU. Raises RMTrainingStopped when ``should_stop`` says so, DataError without training pairs."""
    t0 = time.perf_counter()
    train, held = split_by_prompt(pairs, config.held_out_frac, config.seed)
    if not train:
        raise DataError("no training pairs are left after holding some out: add pairs or lower held_out_frac")
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)  # the fresh head's initial weights
    base = resolve_model_path(config.base_model)
    model, tokenizer = load_reward_model(base, device)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    per_epoch = math.ceil(len(train) / config.batch_size)
    total = (
        per_epoch * config.epochs
        if config.max_steps == 0
        else min(config.max_steps, per_epoch * config.epochs)
    )
    initial = pairwise_accuracy(model, tokenizer, held, config)
    rng = random.Random(f"order:{config.seed}")
    step, loss_value, accuracy = 0, float("nan"), initial
    for _epoch in range(config.epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            if step >= total:
                break
            if should_stop is not None and should_stop():
                raise RMTrainingStopped(f"stopped at step {step} of {total}: nothing was saved")
            batch = [train[i] for i in order[start : start + config.batch_size]]
            loss_value = _optimizer_step(model, tokenizer, optimizer, batch, config)
            step += 1
            measured = None
            if (config.eval_every and step % config.eval_every == 0) or step == total:
                accuracy = measured = pairwise_accuracy(model, tokenizer, held, config)
            if on_progress is not None:
                on_progress(RMProgress(step, total, loss_value, measured, time.perf_counter() - t0))
    result = RMTrainingResult(
        output_dir=config.output_dir, steps=step, train_pairs=len(train), held_out_pairs=len(held),
        held_out_accuracy=accuracy, initial_held_out_accuracy=initial, final_loss=loss_value,
        seconds=round(time.perf_counter() - t0, 2), data_hash=pairs_hash(pairs),
    )  # fmt: skip
    _save(model, tokenizer, config, result)
    return result


def _pair_rewards(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    pairs: Sequence[PreferencePair],
    config: RMTrainingConfig,
) -> tuple[Tensor, Tensor]:
    texts = [p.prompt + p.chosen for p in pairs] + [p.prompt + p.rejected for p in pairs]
    rewards = score_texts(model, tokenizer, texts, config.max_length, config.bf16)  # [2B]
    return rewards[: len(pairs)], rewards[len(pairs) :]


def _optimizer_step(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    optimizer: torch.optim.Optimizer,
    batch: Sequence[PreferencePair],
    config: RMTrainingConfig,
) -> float:
    """One AdamW step on ``batch``, accumulated over micro-batches; the batch's mean loss."""
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for start in range(0, len(batch), config.micro_batch_size):
        chunk = batch[start : start + config.micro_batch_size]
        r_c, r_r = _pair_rewards(model, tokenizer, chunk, config)
        loss = bradley_terry_loss(r_c, r_r, config.margin, config.center_rewards_coefficient)
        if not torch.isfinite(loss):
            raise RLVRError(
                f"the reward model's loss became {float(loss)}: lower learning_rate (now {config.learning_rate})"
            )
        (loss * len(chunk) / len(batch)).backward()
        total += float(loss.detach()) * len(chunk)
    optimizer.step()
    return total / len(batch)


def _save(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    config: RMTrainingConfig,
    result: RMTrainingResult,
) -> None:
    """save_pretrained (safetensors) + tokenizer + rlvr_reward_model.json, written beside the folder and renamed
    into place, so a folder that exists is complete."""
    import safetensors
    import transformers

    final = Path(config.output_dir)
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    metadata = {
        "kind": "bradley_terry_reward_model",
        "base_model": config.base_model,
        "input_format": INPUT_FORMAT,
        "max_length": config.max_length,
        "seed": config.seed,
        "config": config.model_dump(),
        **result.to_json(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "safetensors": safetensors.__version__},
    }  # fmt: skip
    (partial / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True), encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
