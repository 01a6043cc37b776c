"""The bounded settings of a process-reward-model training job (trainer/process/prm_training.py).

Torch-free, so the web app validates a training form with the same model the worker trains with (as
trainer/rewards/bt_config.py does for the Bradley-Terry reward model).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainer.bounds import MAX_SEED, BoundedModel


class PRMHyperParams(BoundedModel):
    """The hyper-parameters of a PRM run (the names of trainer/rewards/bt_config.py where the concept is the same)."""

    learning_rate: float = Field(3e-4, gt=0.0, le=1.0, description="AdamW learning rate.")
    weight_decay: float = Field(0.0, ge=0.0, le=1.0, description="AdamW weight decay.")
    epochs: int = Field(2, ge=1, le=100, description="Passes over the training examples.")
    max_steps: int = Field(
        0, ge=0, le=1_000_000, description="Stop after this many steps (0: epochs decide)."
    )
    batch_size: int = Field(
        16, ge=1, le=1024, description="Examples (step-labelled completions) per optimizer step."
    )
    micro_batch_size: int = Field(
        16, ge=1, le=1024, description="Examples per forward pass; gradients are accumulated over the batch."
    )
    max_length: int = Field(
        512,
        ge=8,
        le=32_768,
        description="Tokens per example; a longer one loses its start, and a step whose end is cut is not trained.",
    )
    held_out_frac: float = Field(
        0.2,
        ge=0.0,
        le=0.5,
        description="Share of prompts whose examples are held out to measure step accuracy.",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the head, the split and the order.")
    soft_labels: bool = Field(
        False,
        description="Train on the labels as probabilities (Math-Shepherd's soft estimation: the share of "
        "Monte-Carlo continuations that are right) instead of thresholding them at label_threshold.",
    )
    label_threshold: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="A label at or above this is 'right' (1), below it 'wrong' (0). Math-Shepherd's hard estimation "
        "(right when any continuation is right) is 1/k for k continuations.",
    )
    eval_every: int = Field(
        20,
        ge=0,
        le=1_000_000,
        description="Measure held-out step accuracy every this many steps (0: at the end only).",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="'auto': a CUDA GPU when there is one."
    )
    bf16: bool = Field(
        True, description="bfloat16 autocast for forward passes on a GPU (no effect on a CPU)."
    )
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass.")


class PRMTrainingConfig(PRMHyperParams):
    """What a PRM training job is asked to do (the web form, the API and ``rlvr train-prm`` fill it)."""

    base_model: str = Field(
        min_length=1,
        max_length=1000,
        description="A causal-LM or token-classification checkpoint folder, or a built-in tiny: model. A causal LM "
        "gets a fresh two-label head (AutoModelForTokenClassification with num_labels=2).",
    )
    output_dir: str = Field(min_length=1, max_length=1000, description="Where the trained PRM is saved.")
