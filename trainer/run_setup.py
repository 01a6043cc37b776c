"""Everything a run holds between steps, and how it is built fresh or from a checkpoint."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.checkpoint import TrainerState, capture_rng, load_state, resolve_checkpoint_dir, restore_rng
from trainer.config import ExperimentConfig
from trainer.data import PromptSampler, check_template, load_samples
from trainer.device import resolve_device, resolve_dtype
from trainer.errors import CheckpointError, ConfigError
from trainer.rollout import HFRolloutEngine, RolloutEngine, SamplingParams
from trainer.tiny_model import resolve_model_path
from trainer.verifiers.base import Verifier
from trainer.verifiers.scoring import build_verifiers


@dataclass
class Run:
    config: ExperimentConfig
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    ref_model: PreTrainedModel | None
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    sampler: PromptSampler
    verifiers: list[tuple[str, Verifier]]
    engine: RolloutEngine
    generator: torch.Generator
    sampling: SamplingParams
    device: torch.device
    base_model_path: str
    start_step: int

    def state(self, step: int) -> TrainerState:
        return TrainerState(
            step=step,
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            sampler=self.sampler.state_dict(),
            rng=capture_rng(self.generator),
            config=self.config.model_dump(mode="json"),
            base_model_path=self.base_model_path,
        )


def load_model(path: str, config: ExperimentConfig, device: torch.device) -> PreTrainedModel:
    if not Path(path).exists():
        raise ConfigError(
            f"model directory {path!r} does not exist: give a local Hugging Face checkpoint directory "
            "(nothing is downloaded) or 'tiny:addition' for the built-in tiny model"
        )
    try:
        model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(path, dtype=resolve_dtype(config.model.dtype))
    except (OSError, ValueError) as err:
        raise ConfigError(f"could not load a causal LM from {path!r}: {err}") from None
    model.to(device)  # type: ignore[arg-type]  # transformers stubs type .to oddly; modules move in place
    return model


def _seed_everything(seed: int) -> torch.Generator:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def build_run(
    config: ExperimentConfig, resume_from: str | Path | None = None, log: Callable[[str], None] = print
) -> Run:
    """Load model, tokenizer, data, verifiers and optimizer; restore a checkpoint when resuming."""
    device = resolve_device(config.model.device)
    generator = _seed_everything(config.seed)
    if device.type != "cpu":
        generator = torch.Generator(device=device).manual_seed(config.seed)

    state: TrainerState | None = None
    checkpoint_dir: Path | None = None
    if resume_from is not None:
        checkpoint_dir = resolve_checkpoint_dir(resume_from)
        state = load_state(checkpoint_dir)
        _check_resumable(config, state.config)
    base_model_path = state.base_model_path if state else resolve_model_path(config.model.name_or_path)

    model = load_model(str(checkpoint_dir or base_model_path), config, device)
    model.train()
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint_dir or base_model_path))
    ref_model = None
    if config.algorithm.beta > 0:
        ref_model = load_model(base_model_path, config, device).eval().requires_grad_(False)

    samples = load_samples(config.data)
    check_template(config.data, samples, tokenizer)  # a chat template problem fails now, not at step 1
    sampler = PromptSampler(samples, config.training.prompts_per_step, seed=config.seed, shuffle=config.data.shuffle)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=config.training.learning_rate,
        betas=(config.training.adam_beta1, config.training.adam_beta2),
        weight_decay=config.training.weight_decay,
    )
    warmup = config.training.warmup_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / (warmup + 1)) if warmup else 1.0)
    r = config.rollout
    run = Run(
        config=config,
        model=model,
        tokenizer=tokenizer,
        ref_model=ref_model,
        optimizer=optimizer,
        scheduler=scheduler,
        sampler=sampler,
        verifiers=build_verifiers(config.verifiers),
        engine=HFRolloutEngine(model, tokenizer),
        generator=generator,
        sampling=SamplingParams(r.max_completion_length, r.temperature, r.top_p, r.top_k, r.generation_batch_size),
        device=device,
        base_model_path=base_model_path,
        start_step=0,
    )
    if state is not None:
        optimizer.load_state_dict(state.optimizer)
        scheduler.load_state_dict(state.scheduler)
        sampler.load_state_dict(state.sampler)
        restore_rng(state.rng, generator)
        run.start_step = state.step
        log(f"resumed from {checkpoint_dir} at step {state.step}")
    return run


# Fields that may differ between the interrupted run and the resumed one.
_RESUME_MAY_CHANGE = {("training", "max_steps"), ("checkpoint", "save_steps"), ("checkpoint", "save_total_limit"), ("name",)}


def _check_resumable(config: ExperimentConfig, saved: dict[str, Any]) -> None:
    """Refuse to resume with a config that would change what the remaining steps compute."""
    now = config.model_dump(mode="json")
    diffs = []
    for section, value in saved.items():
        if isinstance(value, dict):
            for key, old in value.items():
                if (section, key) not in _RESUME_MAY_CHANGE and now.get(section, {}).get(key) != old:
                    diffs.append(f"{section}.{key}: checkpoint {old!r}, now {now.get(section, {}).get(key)!r}")
        elif (section,) not in _RESUME_MAY_CHANGE and now.get(section) != value:
            diffs.append(f"{section}: checkpoint {value!r}, now {now.get(section)!r}")
    if diffs:
        raise CheckpointError(
            "cannot resume: the config differs from the checkpoint's in fields that change training:\n  "
            + "\n  ".join(diffs)
            + "\nresume with the original config (only training.max_steps and checkpoint.* may change)"
        )
