"""HISPO segments (shared/seeds 001:L13): contiguous, entropy-derived pieces of each completion, built at
rollout time, and their soft entropy-based saliency weights.

Boundary rule (ours; the abstract gives none): a completion token opens a new segment when its sampling
entropy is at or above the ``boundary_quantile`` quantile of the step's completion-token
entropies, and the current segment already holds at least ``min_tokens`` tokens. The first token
always opens segment 0. The threshold is taken over the whole step (like ``top_entropy`` credit, with the same
``masked_quantile``), so segments depend neither on micro_batch_size nor, in a data-parallel run, on how the
step is split over processes. A short last segment is kept as it is.

Saliency (ours): w_s proportional to exp(mean entropy of s / T), rescaled so that each completion's
token-weighted mean weight is 1 (the completion's total credit is unchanged; high-entropy "forking"
segments get more, routine ones less). T = 0 turns it off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from trainer.bounds import BoundedModel

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


class SegmentParams(BoundedModel):
    """HISPO's segment rule and saliency (importance_sampling_level 'segment')."""

    boundary_quantile: float = Field(
        0.9,
        gt=0,
        lt=1,
        description="A token starts a new segment when its sampling entropy is at or above this quantile of the "
        "step's completion-token entropies (0.9: the top 10% 'forking' tokens may open segments). The HISPO "
        "abstract does not give the boundary rule; this is ours.",
    )
    min_tokens: int = Field(
        4,
        ge=1,
        le=131_072,
        description="Minimum tokens per segment; a high-entropy token closer than this to the previous boundary "
        "does not open a new one (avoids one-token segments, i.e. token-level IS).",
    )
    saliency_temperature: float = Field(
        1.0,
        ge=0,
        le=100,
        description="Soft saliency: segment weight w_s proportional to exp(mean entropy of s / T), rescaled so a "
        "completion's token-weighted mean weight is 1. 0 turns saliency off (all weights 1).",
    )


@dataclass
class Segments:
    ids: Tensor  # [N, T] long: segment index within the completion (0, 1, ...); 0 on padding
    saliency: Tensor  # [N, T] float: the weight of the token's segment; 0 on padding
    starts: Tensor  # [N, T] bool: the token opens a segment (first token included)


def segment_boundaries(entropy: Tensor, mask: Tensor, quantile: float, min_tokens: int) -> Tensor:
    """Segment ids [N, T] (long) from per-token entropies; padding (mask 0) gets id 0."""
    import torch

    from trainer.methods.token_credit import masked_quantile

    active = mask.bool()  # [N, T]
    ids = torch.zeros(entropy.shape, dtype=torch.long, device=entropy.device)
    threshold = masked_quantile(entropy, active, quantile)  # over the step (every process): a collective
    if threshold is None or not active.any():
        return ids
    candidate = (entropy >= threshold) & active  # [N, T]
    current = torch.zeros(entropy.shape[0], dtype=torch.long, device=entropy.device)  # [N]
    length = torch.zeros_like(current)  # tokens in the current segment so far
    for t in range(entropy.shape[1]):  # T steps, vectorised over completions
        opens = candidate[:, t] & (length >= min_tokens)
        current = current + opens.long()
        length = torch.where(opens, torch.ones_like(length), length + active[:, t].long())
        ids[:, t] = current
    return ids * active.long()


def segment_saliency(ids: Tensor, entropy: Tensor, mask: Tensor, temperature: float) -> Tensor:
    """Per-token weight [N, T] of the token's segment; sum over a completion's tokens = its length."""
    import torch

    maskf = mask.to(entropy.dtype)
    if temperature == 0:
        return maskf.clone()
    n = ids.shape[0]
    num_seg = int(ids.max()) + 1
    flat = (torch.arange(n, device=ids.device)[:, None] * num_seg + ids).reshape(-1)  # [N*T]
    sums = torch.zeros(n * num_seg, dtype=entropy.dtype, device=ids.device).index_add_(
        0, flat, (entropy * maskf).reshape(-1)
    )
    counts = torch.zeros(n * num_seg, dtype=entropy.dtype, device=ids.device).index_add_(
        0, flat, maskf.reshape(-1)
    )
    mean_h = (sums / counts.clamp(min=1.0)).view(n, num_seg)  # [N, S]
    present = counts.view(n, num_seg) > 0
    logits = torch.where(present, mean_h / temperature, torch.full_like(mean_h, -torch.inf))
    logits = logits - logits.max(-1, keepdim=True).values.nan_to_num(neginf=0.0)  # stable exp
    raw = logits.exp() * present  # [N, S]
    # w_s = exp(h_s / T) * L / sum_s' n_s' exp(h_s' / T): token-weighted mean weight 1 per completion.
    length = counts.view(n, num_seg).sum(-1, keepdim=True)  # [N, 1]
    norm = (raw * counts.view(n, num_seg)).sum(-1, keepdim=True).clamp(min=1e-12)
    weights = raw * length / norm  # [N, S]
    return weights.reshape(-1)[flat].view(ids.shape) * maskf  # [N, T]


def entropy_segments(entropy: Tensor, mask: Tensor, params: SegmentParams) -> Segments:
    """Segments and saliency of a step's completions (``importance_sampling_level: segment``)."""
    ids = segment_boundaries(entropy, mask, params.boundary_quantile, params.min_tokens)
    saliency = segment_saliency(ids, entropy, mask, params.saliency_temperature)
    starts = mask.bool().clone()
    starts[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    return Segments(ids=ids, saliency=saliency, starts=starts)


def segment_metrics(segments: Segments, mask: Tensor) -> dict[str, float]:
    """``segment/count_mean`` (segments per completion), ``segment/len_mean`` (tokens), ``segment/saliency_max``."""
    rows = mask.bool().any(-1)
    if not rows.any():
        return {}
    count = segments.starts[rows].sum(-1).float()  # [n]
    tokens = mask[rows].sum(-1).float()
    return {
        "segment/count_mean": float(count.mean()),
        "segment/len_mean": float((tokens / count.clamp(min=1)).mean()),
        "segment/saliency_max": float(segments.saliency.max()),
    }
