"""GMTS, Gradient Magnitude-based Token Selection (token credit ``gmts``; shared/seeds 001:L51).

High-entropy tokens of one completion tend to have large gradients, but entropy alone cannot rank tokens of
different completions, whose answer-level advantages differ. GMTS ranks tokens by an estimate of the size of
their policy-gradient term and trains on the top fraction only (the paper: the top 20% beat the top 20% by
entropy across three domains and model sizes).

The estimate (ours; the abstract gives only "the entropy-gradient connection"): the gradient of token t's
surrogate with respect to its logits z is A_i (e_y - p), whose norm is

    |A_i| * ||e_y - p||_2 = |A_i| * sqrt(1 - 2 p_y + sum_j p_j^2).

The sampled token's probability p_y is known (its logprob at sampling time); the collision probability
sum_j p_j^2 = exp(-H_2) is not stored, so it is approximated from the Shannon entropy, exp(-H) (Renyi-2
entropy H_2 <= H, so this is a lower bound, exact for uniform distributions over a support). Tokens whose
score is at or above the (1 - quantile) quantile of the step's loss tokens keep their advantage; the rest
get 0 and stay in the loss mask (their KL term still counts), as top-entropy selection does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.methods.token_credit import TOKEN_CREDIT, CreditInputs, top_fraction_mask

if TYPE_CHECKING:  # torch stays out of module scope: the web process validates configs
    from torch import Tensor


class GMTSParams(BoundedModel):
    quantile: float = Field(
        0.2,
        gt=0,
        le=1,
        description="Fraction of the step's loss tokens kept, ranked by estimated gradient magnitude (GMTS trains "
        "on the top 20%).",
    )


def gradient_magnitude(advantages: Tensor, inputs: CreditInputs) -> Tensor:
    """|A_i| * sqrt(1 - 2 p_y + exp(-H)) per token [N, T] (0 outside the loss mask); see the module docstring."""
    p = inputs.logprob.exp()  # [N, T] sampled token's probability at sampling time
    collision = (-inputs.entropy).exp()  # [N, T] ~ sum_j p_j^2
    norm = (1 - 2 * p + collision).clamp(min=0).sqrt()
    return advantages.abs()[:, None] * norm * inputs.mask


@TOKEN_CREDIT.method("gmts", params=GMTSParams)
def gmts(advantages: Tensor, inputs: CreditInputs, params: GMTSParams) -> Tensor:
    """GMTS: train only on the tokens with the largest estimated policy-gradient magnitude (entropy-gradient link
    adjusted by each completion's advantage), the top quantile of the step."""
    keep = top_fraction_mask(gradient_magnitude(advantages, inputs), inputs.mask, params.quantile)
    return advantages[:, None] * keep  # [N, T]
