"""Per-token KL estimators to the frozen reference model (Schulman 2020, "Approximating KL Divergence").

Signature: ``(logp [n, T], ref_logp [n, T]) -> per-token KL [n, T]``; the loop adds ``beta * kl`` to the
per-token loss before aggregation, as TRL and the GRPO paper do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from trainer.registry import Registry

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

KLFn = Callable[["Tensor", "Tensor"], "Tensor"]
KL_ESTIMATORS: Registry[KLFn] = Registry("KL estimator")


@KL_ESTIMATORS.register("k3")
def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k3 = exp(ref - logp) - (ref - logp) - 1: unbiased for KL(pi || ref), non-negative (GRPO's choice)."""
    import torch

    diff = ref_logp - logp
    return torch.exp(diff) - diff - 1.0


@KL_ESTIMATORS.register("k1")
def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k1 = logp - ref: unbiased but high variance and can be negative per token."""
    return logp - ref_logp
