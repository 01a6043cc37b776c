"""Per-token KL estimators to the frozen reference model (Schulman 2020, "Approximating KL Divergence").

Axis ``algorithm.kl_estimator``, hook point ``regularizer``. Hook signature: ``(logp [n, T], ref_logp [n, T]) -> per-token KL [n, T]``; the loop adds ``beta * kl`` to the
per-token loss before aggregation, as TRL and the GRPO paper do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainer.methods.axes import Axis

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

KLFn = Callable[["Tensor", "Tensor"], "Tensor"]
KL_ESTIMATORS: Axis[KLFn] = Axis(
    "KL estimator",
    "algorithm.kl_estimator",
    "regularizer",
    default="k3",
    description="Per-token KL estimator to the reference model (Schulman 2020); weighted by algorithm.beta.",
)


@KL_ESTIMATORS.method("k3")
def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k3 = exp(ref - logp) - (ref - logp) - 1: unbiased for KL(pi || ref), non-negative (GRPO's choice)."""
    import torch

    diff = ref_logp - logp
    return torch.exp(diff) - diff - 1.0


@KL_ESTIMATORS.method("k1")
def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """k1 = logp - ref: unbiased but high variance and can be negative per token."""
    return logp - ref_logp


@KL_ESTIMATORS.check("k1")
def _k1_needs_a_kl_weight(config: Any, params: Any) -> None:
    if config.algorithm.beta == 0:
        raise ValueError(
            "algorithm.kl_estimator 'k1' has no effect with algorithm.beta 0 (no KL term, no reference model): set "
            "beta > 0 (e.g. 0.04) or leave kl_estimator at 'k3'"
        )
