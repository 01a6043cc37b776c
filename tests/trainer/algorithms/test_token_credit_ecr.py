"""ECR, UECR-GRPO's entropy-calibrated zero-sum redistribution (shared/seeds 001:L3), on hand-computed tensors."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.methods import TOKEN_CREDIT, CreditInputs
from trainer.methods.token_credit import ECRParams

ECR = TOKEN_CREDIT.get("ecr")
GAP = torch.tensor([[1.0, 0.0, -1.0]])  # teacher logprob - policy logprob per token
UNIFORM_PARAMS = AlgorithmConfig().token_credit.params


def ecr(**params: float) -> ECRParams:
    """ECR's params as the config validates them (algorithm.token_credit: {name: ecr, params})."""
    choice = AlgorithmConfig(token_credit={"name": "ecr", "params": params}).token_credit
    assert choice == "ecr"
    return choice.params


def inputs(
    gap: torch.Tensor = GAP,
    entropy: torch.Tensor | None = None,
    vocab: int = 4,
    mask: torch.Tensor | None = None,
) -> CreditInputs:
    mask = torch.ones_like(gap) if mask is None else mask
    policy = torch.full_like(gap, -2.0)
    return CreditInputs(
        mask=mask,
        entropy=torch.zeros_like(gap),
        logprob=policy,
        teacher_logprob=policy + gap,
        teacher_entropy=torch.zeros_like(gap) if entropy is None else entropy,
        teacher_vocab_size=vocab,
    )


def test_a_rewarded_completion_gives_more_credit_where_the_teacher_agrees() -> None:
    # d = [1, 0, -1] (mean 0), s = 0.5: w = [1.5, 1, 0.5]
    out = ECR(torch.tensor([2.0]), inputs(), ecr(strength=0.5))
    assert out.tolist() == [[3.0, 2.0, 1.0]]


def test_a_penalised_completion_gives_more_blame_where_the_teacher_disagrees() -> None:
    out = ECR(torch.tensor([-1.0]), inputs(), ecr(strength=0.5))
    assert out.tolist() == [[-0.5, -1.0, -1.5]]


def test_the_strength_is_capped_so_no_token_falls_below_the_minimum_weight() -> None:
    # s = 2 would give w = [3, 1, -1]; the cap (1 - 0.1) / 1 = 0.9 gives w = [1.9, 1, 0.1]
    out = ECR(torch.tensor([2.0]), inputs(), ecr(strength=2.0, min_weight=0.1))
    assert torch.allclose(out, torch.tensor([[3.8, 2.0, 0.2]]))


def test_an_uncertain_teacher_is_attenuated_by_its_full_vocabulary_entropy() -> None:
    # token 0's teacher is uniform over V=4 (H = log 4): its gap counts 0. d = [0, 0, -1], mean -1/3,
    # centred [1/3, 1/3, -2/3], s = 0.5: w = [7/6, 7/6, 2/3].
    entropy = torch.tensor([[math.log(4), 0.0, 0.0]])
    out = ECR(torch.tensor([3.0]), inputs(entropy=entropy), ecr(strength=0.5))
    assert torch.allclose(out, torch.tensor([[3.5, 3.5, 2.0]]))


@pytest.mark.parametrize("strength", [0.3, 1.0, 5.0])
def test_each_completion_keeps_its_total_credit_and_every_tokens_sign(strength: float) -> None:
    g = torch.Generator().manual_seed(0)
    gap = torch.randn(6, 9, generator=g) * 3
    entropy = torch.rand(6, 9, generator=g) * math.log(50)
    mask = (torch.rand(6, 9, generator=g) > 0.2).float()
    mask[:, 0] = 1
    adv = torch.tensor([1.5, -0.7, 0.0, 2.0, -3.0, 0.1])
    params = ecr(strength=strength)
    out = ECR(adv, inputs(gap, entropy, vocab=50, mask=mask), params)
    uniform = TOKEN_CREDIT.get("uniform")(adv, inputs(gap, entropy, vocab=50, mask=mask), UNIFORM_PARAMS)
    assert torch.allclose(out.sum(-1), uniform.sum(-1), atol=1e-5)  # total credit per completion
    real = mask.bool()
    assert torch.all(torch.sign(out[real]) == torch.sign(uniform[real]))  # each token keeps the sign of A
    assert torch.all(out[~real] == 0)
    weights = out[real & (adv[:, None] != 0)] / uniform[real & (adv[:, None] != 0)]
    assert weights.min() >= params.min_weight - 1e-6


def test_padding_tokens_take_no_part_in_the_redistribution() -> None:
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    gap = torch.tensor([[1.0, 0.0, -1.0, 50.0]])
    out = ECR(torch.tensor([2.0]), inputs(gap, mask=mask), ecr(strength=0.5))
    assert out.tolist() == [[3.0, 2.0, 1.0, 0.0]]


def test_ecr_without_teacher_signals_says_what_to_configure() -> None:
    plain = CreditInputs(mask=torch.ones(1, 2), entropy=torch.zeros(1, 2), logprob=torch.zeros(1, 2))
    with pytest.raises(ValueError, match="configure a teacher"):
        ECR(torch.tensor([1.0]), plain, ecr())


def test_older_credit_rules_still_work_without_teacher_fields() -> None:
    plain = CreditInputs(torch.ones(1, 2), torch.zeros(1, 2), torch.zeros(1, 2))
    assert plain.teacher_logprob is None
    assert TOKEN_CREDIT.get("uniform")(torch.tensor([1.0]), plain, UNIFORM_PARAMS).tolist() == [[1.0, 1.0]]
