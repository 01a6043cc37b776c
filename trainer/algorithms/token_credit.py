"""Token credit: one advantage per completion -> one advantage per token.

Signature: ``(advantages [N], inputs: CreditInputs, cfg) -> per-token advantages [N, T]``. The result is
what the dashboard colours each token by. Tokens outside ``inputs.mask`` get 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainer.registry import Registry

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor

    from trainer.config import AlgorithmConfig


@dataclass
class CreditInputs:
    """Per-token data a credit rule may use. The teacher fields are None without a teacher (trainer/teacher.py)."""

    mask: Tensor  # [N, T] 1 for completion tokens in the loss
    entropy: Tensor  # [N, T] policy entropy at sampling time (nats)
    logprob: Tensor  # [N, T] sampled tokens' logprobs at sampling time
    teacher_logprob: Tensor | None = None  # [N, T] log pi_teacher(y_t) of the sampled tokens
    teacher_entropy: Tensor | None = None  # [N, T] full-vocabulary teacher entropy at the position (nats)
    teacher_vocab_size: int | None = None  # V of the teacher's distribution (its entropy is at most log V)


TokenCreditFn = Callable[["Tensor", CreditInputs, "AlgorithmConfig"], "Tensor"]
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


def ecr_weights(advantages: Tensor, inputs: CreditInputs, strength: float, min_weight: float) -> Tensor:
    """ECR token weights [N, T]: mean 1 over each completion's masked tokens, all >= ``min_weight``.

    d_t = sign(A) * gap_t * (1 - H_t / log V) is the teacher's entropy-damped, advantage-signed opinion of
    token t (gap_t = log pi_teacher - log pi_old); w_t = 1 + s * (d_t - mean d) is its zero-sum projection,
    with s = strength, shrunk per completion to the largest value that keeps min(w) >= min_weight.
    """
    import math

    import torch

    if inputs.teacher_logprob is None or inputs.teacher_entropy is None or not inputs.teacher_vocab_size:
        raise ValueError("token_credit 'ecr' needs teacher logprobs and entropies: configure a teacher")
    mask = inputs.mask.to(advantages.dtype)  # [N, T]
    gap = (inputs.teacher_logprob - inputs.logprob) * mask  # [N, T]
    confidence = (1 - inputs.teacher_entropy / math.log(inputs.teacher_vocab_size)).clamp(0, 1)  # [N, T]
    signed = torch.sign(advantages)[:, None] * gap * confidence * mask  # [N, T]
    count = mask.sum(-1, keepdim=True).clamp(min=1)  # [N, 1]
    centred = (signed - signed.sum(-1, keepdim=True) / count) * mask  # [N, T], zero-sum per row
    lowest = centred.masked_fill(mask == 0, 0.0).min(-1, keepdim=True).values  # [N, 1] <= 0
    cap = (1 - min_weight) / (-lowest).clamp(min=1e-12)  # [N, 1] largest s with min w >= min_weight
    scale = torch.minimum(torch.full_like(cap, strength), cap)
    return (1 + scale * centred) * mask


@TOKEN_CREDIT.register("ecr")
def entropy_calibrated_redistribution(advantages: Tensor, inputs: CreditInputs, cfg: AlgorithmConfig) -> Tensor:
    """ECR, Entropy-Calibrated Redistribution (UECR-GRPO, shared/seeds 001:L3): spread each completion's
    advantage over its tokens by the signed teacher-minus-old-policy gap, damped where the teacher is
    uncertain (high full-vocabulary entropy), with a zero-sum projection that keeps the completion's total
    credit (sum of token advantages = A x tokens, as 'uniform') and every token's sign (see ``ecr_weights``).

    Differs from the paper, whose abstract gives no formula: the damping is 1 - H / log V (0 for a uniform
    teacher, 1 for a certain one), the redistribution is multiplicative around the uniform split with a
    per-completion cap instead of a learned or tuned projection, and it applies to whatever scalar advantage
    the estimator produced (with fusion 'puu' that already contains the teacher score, as in UECR-GRPO).
    """
    weights = ecr_weights(advantages, inputs, cfg.ecr_strength, cfg.ecr_min_weight)  # [N, T]
    return advantages[:, None] * weights
