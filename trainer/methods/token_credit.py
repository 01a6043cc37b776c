"""Token credit: one advantage per completion -> one advantage per token.

Axis ``algorithm.token_credit``, hook point ``token_credit``. Hook signature: ``(advantages [N], inputs:
CreditInputs, params) -> per-token advantages [N, T]``. The result is
what the dashboard colours each token by. Tokens outside ``inputs.mask`` get 0.

Token selection by a step-wide threshold (``top_fraction_mask``: keep the top fraction of the step's tokens by
a score) takes its quantile over every process's tokens in a data-parallel run, so a process selects what one
process would select among the same tokens; HISPO's segment boundaries (segments.py) use the same quantile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.methods.axes import Axis

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


@dataclass
class CreditInputs:
    """Per-token data a credit rule may use. The teacher fields are None without a teacher (trainer/step/teacher.py)."""

    mask: Tensor  # [N, T] 1 for completion tokens in the loss
    entropy: Tensor  # [N, T] policy entropy at sampling time (nats)
    logprob: Tensor  # [N, T] sampled tokens' logprobs at sampling time
    teacher_logprob: Tensor | None = None  # [N, T] log pi_teacher(y_t) of the sampled tokens
    teacher_entropy: Tensor | None = None  # [N, T] full-vocabulary teacher entropy at the position (nats)
    teacher_vocab_size: int | None = None  # V of the teacher's distribution (its entropy is at most log V)


TokenCreditFn = Callable[["Tensor", CreditInputs, Any], "Tensor"]
TOKEN_CREDIT: Axis[TokenCreditFn] = Axis(
    "token credit",
    "algorithm.token_credit",
    "token_credit",
    default="uniform",
    description="How a completion's advantage becomes per-token advantages (what the token view colours).",
)


@TOKEN_CREDIT.method("uniform")
def uniform(advantages: Tensor, inputs: CreditInputs, params: Any) -> Tensor:
    """Every token of a completion gets the completion's advantage (GRPO, Shao et al. 2024)."""
    return advantages[:, None] * inputs.mask  # [N, T]


def masked_quantile(values: Tensor, mask: Tensor, q: float) -> Tensor | None:
    """The ``q`` quantile (torch.quantile's linear interpolation) of ``values`` where ``mask`` is set, over the
    whole step: in a data-parallel run every process's masked values (trainer/distributed/context.py
    ``all_ranks``), so every process gets the 1-process threshold. None when no value is masked anywhere.
    Every process must call it at the same point of the step (a collective), even with nothing masked."""
    import torch

    from trainer.distributed.context import all_ranks

    active = all_ranks(values[mask.bool()].float())  # [masked tokens of the step]
    if active.numel() == 0:
        return None
    return torch.quantile(active, q)


def top_fraction_mask(scores: Tensor, mask: Tensor, fraction: float) -> Tensor:
    """1 for the masked tokens whose score is at or above the (1 - ``fraction``) quantile of the step's masked
    scores (``masked_quantile``: over every process), else 0; [N, T] in ``mask``'s dtype.

    >>> import torch
    >>> top_fraction_mask(torch.tensor([[0.1, 0.9, 0.5, 0.7]]), torch.tensor([[1, 1, 1, 0]]), 0.5).tolist()
    [[0, 1, 1, 0]]
    """
    import torch

    threshold = masked_quantile(scores, mask, 1.0 - fraction)
    if threshold is None:
        return torch.zeros_like(mask)
    return ((scores >= threshold) & mask.bool()).to(mask.dtype)


class TopEntropyParams(BoundedModel):
    quantile: float = Field(
        0.2,
        gt=0,
        le=1,
        description="Fraction of highest-entropy tokens kept (TRL's top_entropy_quantile; Wang et al. 2025 use 0.2).",
    )


@TOKEN_CREDIT.method("top_entropy", params=TopEntropyParams)
def top_entropy(advantages: Tensor, inputs: CreditInputs, params: TopEntropyParams) -> Tensor:
    """Train only on the highest-entropy "forking" tokens (Wang et al. 2025, "Beyond the 80/20 Rule"):
    keep the top ``quantile`` of the step's tokens by entropy.

    Differs from TRL in where the entropy comes from: the threshold is taken over the whole step's
    sampling-time entropies (identical to the training-time ones when num_iterations is 1), not per
    micro-batch, so the mask does not depend on micro_batch_size (nor, in a data-parallel run, on how the step
    is split over processes: ``top_fraction_mask``). Low-entropy tokens get advantage 0 but stay in the loss
    mask (their KL term still counts), as in TRL.
    """
    keep = top_fraction_mask(inputs.entropy, inputs.mask, params.quantile)
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


class ECRParams(BoundedModel):
    strength: float = Field(
        1.0,
        gt=0,
        le=100,
        description="s in w_t = 1 + s (d_t - mean d), d_t = sign(A) (log pi_teacher - log pi_old)(y_t) x (1 - "
        "H_teacher,t / log V); lowered per completion when needed so that every w_t >= min_weight. The weights "
        "average 1, so each completion keeps its total credit and every token keeps the sign of A (UECR-GRPO; the "
        "abstract gives no formula, this is ours).",
    )
    min_weight: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="The smallest token weight w_t the redistribution may give (> 0 keeps every token's sign "
        "strictly; 0 allows a token's credit to reach exactly 0).",
    )


@TOKEN_CREDIT.method("ecr", params=ECRParams)
def entropy_calibrated_redistribution(advantages: Tensor, inputs: CreditInputs, params: ECRParams) -> Tensor:
    """ECR, Entropy-Calibrated Redistribution (UECR-GRPO): spread each completion's advantage over its tokens
    by the teacher-minus-policy gap, entropy-damped and zero-sum per completion (needs a teacher).

    The signed teacher-minus-old-policy gap is damped where the teacher is uncertain (high full-vocabulary
    entropy), with a zero-sum projection that keeps the completion's total credit (sum of token advantages =
    A x tokens, as 'uniform') and every token's sign (see ``ecr_weights``). Source: shared/seeds 001:L3.

    Differs from the paper, whose abstract gives no formula: the damping is 1 - H / log V (0 for a uniform
    teacher, 1 for a certain one), the redistribution is multiplicative around the uniform split with a
    per-completion cap instead of a learned or tuned projection, and it applies to whatever scalar advantage
    the estimator produced (with fusion 'puu' that already contains the teacher score, as in UECR-GRPO).
    """
    weights = ecr_weights(advantages, inputs, params.strength, params.min_weight)  # [N, T]
    return advantages[:, None] * weights


@TOKEN_CREDIT.method("ecr", point="needs_teacher")
def _ecr_reads_the_teacher(params: ECRParams, step: int) -> bool:
    return True


@TOKEN_CREDIT.check("ecr")
def _ecr_needs_a_teacher(config: Any, params: Any) -> None:
    if not config.teacher.enabled:
        raise ValueError(
            "algorithm.token_credit 'ecr' needs a teacher: set teacher.name_or_path (e.g. 'tiny:chain-teacher', "
            "built by `rlvr init-model --teacher`) or teacher.mode 'self' (the policy with the reference answer)"
        )
    fusion = config.teacher.fusion
    if fusion.name == "opd" and fusion.params.until_step is None:
        raise ValueError(
            "algorithm.token_credit 'ecr' redistributes the verifier advantage, which teacher.fusion 'opd' "
            "discards: use fusion 'puu' (UECR-GRPO), 'none', or set the opd params' until_step (OPD-then-RL)"
        )
