"""Shared pieces of the GSPO-token and HISPO-segment tests: clip settings and a one-micro-batch step."""

from __future__ import annotations

import torch

from trainer.config import AlgorithmConfig
from trainer.methods import AggregationContext

CFG = AlgorithmConfig(epsilon=0.2, epsilon_high=0.28)
DUAL = AlgorithmConfig(epsilon=0.2, epsilon_high=0.28, dual_clip=True, dual_clip_c=3.0)


def ctx(mask: torch.Tensor) -> AggregationContext:
    """The aggregation context of a step that is this one micro-batch."""
    return AggregationContext(
        sequences_in_step=mask.shape[0],
        tokens_in_step=int(mask.sum()),
        max_completion_length=mask.shape[1],
        num_micro_batches=1,
    )
