"""Vectorised per-group statistics over a flat batch (completions tagged with their prompt's group id).

Groups may have different sizes (dynamic sampling, variance-guided allocation), so everything is a
scatter over ``group_ids`` rather than a reshape to [P, G].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


def group_mean(values: Tensor, group_ids: Tensor) -> Tensor:
    """Mean of each completion's group, broadcast back to the completion. [N] -> [N]."""
    import torch

    num_groups = _num_groups(group_ids)
    sums = torch.zeros(num_groups, dtype=values.dtype, device=values.device).index_add_(0, group_ids, values)
    counts = torch.bincount(group_ids, minlength=num_groups).to(values.dtype)
    return (sums / counts.clamp(min=1))[group_ids]


def group_std(values: Tensor, group_ids: Tensor) -> Tensor:
    """Unbiased (Bessel-corrected, like torch.std and TRL) std of each completion's group. [N] -> [N].

    A group of one completion has std 0 (no spread can be measured).
    """
    import torch

    num_groups = _num_groups(group_ids)
    centred = values - group_mean(values, group_ids)
    sq = torch.zeros(num_groups, dtype=values.dtype, device=values.device).index_add_(
        0, group_ids, centred**2
    )
    counts = torch.bincount(group_ids, minlength=num_groups).to(values.dtype)
    var = sq / (counts - 1).clamp(min=1)
    return var.sqrt()[group_ids]


def group_sizes(group_ids: Tensor) -> Tensor:
    """Size of each completion's group. [N] -> [N]."""
    import torch

    return torch.bincount(group_ids)[group_ids]


def _num_groups(group_ids: Tensor) -> int:
    """Groups the ids index (0 for an empty batch: a process whose every sample was dropped still takes part in the
    step's collective statistics with nothing)."""
    return int(group_ids.max().item()) + 1 if group_ids.numel() else 0
