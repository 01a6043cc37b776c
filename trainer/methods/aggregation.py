"""Aggregation: per-token loss + mask -> the scalar back-propagated for one micro-batch.

Axis ``algorithm.loss_type``, hook point ``aggregation``. Hook signature: ``(per_token_loss [n, T], mask [n, T], ctx) -> scalar``. Micro-batch losses are *summed*
over the step (gradient accumulation), so each rule divides by step-level counts from ``ctx``. With
equal micro-batches the four rules equal TRL's ``loss_type`` values exactly (tests check the formulas).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainer.methods.axes import Axis

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


@dataclass(frozen=True)
class AggregationContext:
    sequences_in_step: int  # completions in the whole optimizer step
    tokens_in_step: int  # loss-mask tokens in the whole optimizer step
    max_completion_length: int
    num_micro_batches: int


AggregationFn = Callable[["Tensor", "Tensor", AggregationContext], "Tensor"]
AGGREGATIONS: Axis[AggregationFn] = Axis(
    "loss aggregation",
    "algorithm.loss_type",
    "aggregation",
    default="dapo",
    description="Loss normalisation over tokens and completions, as TRL's loss_type.",
)


@AGGREGATIONS.method("grpo")
def seq_mean_token_mean(loss: Tensor, mask: Tensor, ctx: AggregationContext) -> Tensor:
    """GRPO (Shao et al. 2024): mean over each completion's tokens, then over completions. Short
    completions weigh more per token (the length bias Dr. GRPO points out)."""
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # [n]
    return per_seq.sum() / ctx.sequences_in_step


@AGGREGATIONS.method("bnpo")
def micro_batch_token_mean(loss: Tensor, mask: Tensor, ctx: AggregationContext) -> Tensor:
    """BNPO as TRL defines it: mean over the micro-batch's tokens, divided by the number of micro-batches."""
    return (loss * mask).sum() / mask.sum().clamp(min=1.0) / ctx.num_micro_batches


@AGGREGATIONS.method("dr_grpo")
def seq_sum_const_norm(loss: Tensor, mask: Tensor, ctx: AggregationContext) -> Tensor:
    """Dr. GRPO (Liu et al. 2025): sum over tokens / (completions x max_completion_length), a constant
    normaliser free of length bias."""
    return (loss * mask).sum() / (ctx.sequences_in_step * ctx.max_completion_length)


@AGGREGATIONS.method("dapo")
def step_token_mean(loss: Tensor, mask: Tensor, ctx: AggregationContext) -> Tensor:
    """DAPO (Yu et al. 2025) token-level loss: sum over tokens / all loss tokens of the step."""
    return (loss * mask).sum() / max(ctx.tokens_in_step, 1)
