"""The bounded settings of a Bradley-Terry reward-model training job (trainer/rewards/bradley_terry.py).

Torch-free, so the web app validates a training form with the same model the worker trains with.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainer.bounds import MAX_SEED, BoundedModel


class RMHyperParams(BoundedModel):
    """The hyper-parameters of a Bradley-Terry run (TRL's RewardConfig names where the concept is the same)."""

    learning_rate: float = Field(1e-4, gt=0.0, le=1.0, description="AdamW learning rate.")
    weight_decay: float = Field(0.0, ge=0.0, le=1.0, description="AdamW weight decay.")
    epochs: int = Field(1, ge=1, le=100, description="Passes over the training pairs.")
    max_steps: int = Field(
        0, ge=0, le=1_000_000, description="Stop after this many steps (0: epochs decide)."
    )
    batch_size: int = Field(16, ge=1, le=1024, description="Pairs per optimizer step.")
    micro_batch_size: int = Field(
        16, ge=1, le=1024, description="Pairs per forward pass; gradients are accumulated over the batch."
    )
    max_length: int = Field(
        512, ge=8, le=32_768, description="Tokens per text; longer ones lose their start (the end is kept)."
    )
    held_out_frac: float = Field(
        0.1, ge=0.0, le=0.5, description="Share of prompts whose pairs are held out to measure accuracy."
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the head, the split and the order.")
    center_rewards_coefficient: float = Field(
        0.0,
        ge=0.0,
        le=10.0,
        description="Weight of the mean squared (r_chosen + r_rejected), keeping rewards centred on 0 (Eisenstein "
        "et al. 2023, 'Helping or Herding?'; TRL's RewardTrainer field of the same name). 0: off.",
    )
    margin: float = Field(
        0.0,
        ge=0.0,
        le=100.0,
        description="Required gap: loss -log sigmoid(r_c - r_r - margin) (Llama 2's margin).",
    )
    eval_every: int = Field(
        20,
        ge=0,
        le=1_000_000,
        description="Measure held-out accuracy every this many steps (0: at the end only).",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="'auto': a CUDA GPU when there is one."
    )
    bf16: bool = Field(
        True, description="bfloat16 autocast for forward passes on a GPU (no effect on a CPU)."
    )
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass.")


class RMTrainingConfig(RMHyperParams):
    """What a reward-model training job is asked to do (the web form, the API and ``rlvr train-rm`` fill it)."""

    base_model: str = Field(
        max_length=1000,
        description="A causal-LM or sequence-classification checkpoint folder, or a built-in tiny: model. A "
        "causal LM gets a fresh scalar head (AutoModelForSequenceClassification with num_labels=1).",
    )
    output_dir: str = Field(max_length=1000, description="Where the trained reward model is saved.")
