"""Token credit: one advantage per completion -> one advantage per token.

Signature: ``(advantages [N], inputs: CreditInputs, cfg) -> per-token advantages [N, T]``. The result is
what the dashboard colours each token by. Tokens outside ``inputs.mask`` get 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainer.config import AlgorithmConfig
from trainer.registry import Registry

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


@dataclass
class CreditInputs:
    """Per-token data a credit rule may use. Later rules (teacher-guided) add optional fields."""

    mask: Tensor  # [N, T] 1 for completion tokens in the loss
    entropy: Tensor  # [N, T] policy entropy at sampling time (nats)
    logprob: Tensor  # [N, T] sampled tokens' logprobs at sampling time


TokenCreditFn = Callable[["Tensor", CreditInputs, AlgorithmConfig], "Tensor"]
TOKEN_CREDIT: Registry[TokenCreditFn] = Registry("token credit")


@TOKEN_CREDIT.register("uniform")
def uniform(advantages: Tensor, inputs: CreditInputs, cfg: AlgorithmConfig) -> Tensor:
    """Every token of a completion gets the completion's advantage (GRPO, Shao et al. 2024)."""
    return advantages[:, None] * inputs.mask  # [N, T]


def high_entropy_mask(entropy: Tensor, mask: Tensor, quantile: float) -> Tensor:
    """1 for tokens whose entropy is at or above the (1 - quantile) quantile of the masked tokens."""
    import torch

    active = entropy[mask.bool()]
    if active.numel() == 0:
        return torch.zeros_like(mask)
    threshold = torch.quantile(active.float(), 1.0 - quantile)
    return ((entropy >= threshold) & mask.bool()).to(mask.dtype)


@TOKEN_CREDIT.register("top_entropy")
def top_entropy(advantages: Tensor, inputs: CreditInputs, cfg: AlgorithmConfig) -> Tensor:
    """Train only on the highest-entropy "forking" tokens (Wang et al. 2025, "Beyond the 80/20 Rule";
    001:L51 cites it): keep the top ``top_entropy_quantile`` of the step's tokens by entropy.

    Differs from TRL in where the entropy comes from: the threshold is taken over the whole step's
    sampling-time entropies (identical to the training-time ones when num_iterations is 1), not per
    micro-batch, so the mask does not depend on micro_batch_size. Low-entropy tokens get advantage 0 but
    stay in the loss mask (their KL term still counts), as in TRL.
    """
    keep = high_entropy_mask(inputs.entropy, inputs.mask, cfg.top_entropy_quantile)
    return advantages[:, None] * keep  # [N, T]
