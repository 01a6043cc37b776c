"""Token credit (uniform, top-entropy) and the KL estimators, on tiny tensors."""

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.methods import KL_ESTIMATORS, TOKEN_CREDIT, CreditInputs

ADV = torch.tensor([2.0, -1.0])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
ENTROPY = torch.tensor([[0.1, 2.0, 0.5, 9.0], [3.0, 0.2, 9.0, 9.0]])


def inputs() -> CreditInputs:
    return CreditInputs(mask=MASK, entropy=ENTROPY, logprob=torch.zeros_like(MASK))


def top_entropy(quantile: float) -> AlgorithmConfig:
    return AlgorithmConfig(token_credit={"name": "top_entropy", "params": {"quantile": quantile}})


def test_uniform_copies_the_advantage_to_every_real_token() -> None:
    out = TOKEN_CREDIT.get("uniform")(ADV, inputs(), AlgorithmConfig().token_credit.params)
    assert out.tolist() == [[2.0, 2.0, 2.0, 0.0], [-1.0, -1.0, 0.0, 0.0]]


def test_top_entropy_keeps_only_the_highest_entropy_real_tokens() -> None:
    cfg = top_entropy(0.4)  # 5 real tokens, entropies .1 2 .5 3 .2
    assert cfg.token_credit == "top_entropy" and cfg.token_credit.params.quantile == 0.4
    out = TOKEN_CREDIT.get("top_entropy")(ADV, inputs(), cfg.token_credit.params)
    # threshold = 60th percentile of [.1, .2, .5, 2, 3] = 0.5 + 0.4*(2-0.5)... tokens >= it: 2.0 and 3.0
    assert out.tolist() == [[0.0, 2.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0]]


def test_top_entropy_ignores_padding_even_when_its_entropy_is_high() -> None:
    out = TOKEN_CREDIT.get("top_entropy")(ADV, inputs(), top_entropy(0.2).token_credit.params)
    assert out[0, 3] == 0 and out[1, 2] == 0 and out[1, 3] == 0


def test_top_entropy_with_no_real_tokens_gives_zeros() -> None:
    empty = CreditInputs(mask=torch.zeros(2, 4), entropy=ENTROPY, logprob=torch.zeros(2, 4))
    out = TOKEN_CREDIT.get("top_entropy")(ADV, empty, top_entropy(0.5).token_credit.params)
    assert torch.all(out == 0)


def test_k3_matches_its_formula_and_is_zero_at_equal_logprobs() -> None:
    logp, ref = torch.tensor([-1.0, -2.0]), torch.tensor([-1.0, -1.5])
    k3 = KL_ESTIMATORS.get("k3")(logp, ref)
    assert k3[0].item() == 0.0
    assert k3[1].item() == pytest.approx(math.exp(0.5) - 0.5 - 1)


def test_k1_is_the_log_ratio() -> None:
    k1 = KL_ESTIMATORS.get("k1")(torch.tensor([-1.0]), torch.tensor([-1.5]))
    assert k1.item() == pytest.approx(0.5)
