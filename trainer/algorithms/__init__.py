"""The GRPO-family objective, one registry per axis (DESIGN.md, "Registries").

advantages     rewards of a step + group ids -> one advantage per completion
token_credit   per-completion advantage -> per-token advantage
policy_losses  logprobs, old logprobs, per-token advantages -> per-token loss
aggregation    per-token loss + mask -> the scalar that is back-propagated
regularizers   per-token KL to the reference model
fusion         verifier + teacher signals (OPD, additive, modulated, PUU); shaping: label-free rewards,
               length penalties; rarity: Cue-GRPO; segments: HISPO; answer_span: OM-GRPO

Adding a method = one registered function + its tests; the training loop does not change.
"""

from trainer.algorithms.advantages import ADVANTAGES, compute_advantages
from trainer.algorithms.aggregation import AGGREGATIONS, AggregationContext
from trainer.algorithms.policy_losses import POLICY_LOSSES, PolicyLossOutput
from trainer.algorithms.regularizers import KL_ESTIMATORS
from trainer.algorithms.token_credit import TOKEN_CREDIT, CreditInputs

__all__ = [
    "ADVANTAGES",
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "POLICY_LOSSES",
    "TOKEN_CREDIT",
    "AggregationContext",
    "CreditInputs",
    "PolicyLossOutput",
    "compute_advantages",
]
