"""The four loss normalisations against the formulas of TRL's loss_type, written out here."""

import pytest
import torch

from trainer.methods import AGGREGATIONS, AggregationContext

LOSS = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
L_MAX = 6


def ctx(n_micro: int = 1) -> AggregationContext:
    return AggregationContext(
        sequences_in_step=3,
        tokens_in_step=int(MASK.sum()),
        max_completion_length=L_MAX,
        num_micro_batches=n_micro,
    )


def test_grpo_is_the_mean_of_per_sequence_token_means() -> None:
    expected = ((1 + 2 + 3) / 3 + 4 / 1 + 4 / 4) / 3
    assert AGGREGATIONS.get("grpo")(LOSS, MASK, ctx()).item() == pytest.approx(expected)


def test_bnpo_is_the_token_mean_of_the_batch() -> None:
    assert AGGREGATIONS.get("bnpo")(LOSS, MASK, ctx()).item() == pytest.approx(14 / 8)


def test_dr_grpo_divides_by_sequences_times_max_length() -> None:
    assert AGGREGATIONS.get("dr_grpo")(LOSS, MASK, ctx()).item() == pytest.approx(14 / (3 * L_MAX))


def test_dapo_divides_by_all_tokens_of_the_step() -> None:
    assert AGGREGATIONS.get("dapo")(LOSS, MASK, ctx()).item() == pytest.approx(14 / 8)


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_micro_batches_sum_to_the_full_batch_value(loss_type: str) -> None:
    agg = AGGREGATIONS.get(loss_type)
    full = agg(LOSS, MASK, ctx()).item()
    parts = agg(LOSS[:2], MASK[:2], ctx(2)).item() + agg(LOSS[2:], MASK[2:], ctx(2)).item()
    assert parts == pytest.approx(full)


def test_bnpo_averages_micro_batch_token_means_like_trl() -> None:
    agg = AGGREGATIONS.get("bnpo")
    parts = agg(LOSS[:2], MASK[:2], ctx(2)).item() + agg(LOSS[2:], MASK[2:], ctx(2)).item()
    assert parts == pytest.approx((10 / 4 + 4 / 4) / 2)


def test_an_all_masked_row_contributes_nothing_and_does_not_divide_by_zero() -> None:
    loss = torch.tensor([[5.0, 5.0], [1.0, 1.0]])
    mask = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    c = AggregationContext(
        sequences_in_step=2, tokens_in_step=2, max_completion_length=2, num_micro_batches=1
    )
    for name in ["grpo", "bnpo", "dr_grpo", "dapo"]:
        value = AGGREGATIONS.get(name)(loss, mask, c)
        assert torch.isfinite(value)
    assert AGGREGATIONS.get("grpo")(loss, mask, c).item() == pytest.approx(0.5)
    assert AGGREGATIONS.get("dapo")(loss, mask, c).item() == pytest.approx(1.0)
