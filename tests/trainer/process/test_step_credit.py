"""Step credit (trainer/methods/step_credit.py): hand-computed process advantages for each method on small
tensors: sum vs PURE's min, mean and last, group normalisation over tokens, absent scores, the loss mask,
success gating (Posterior-GRPO), Clipping and Delta, PROF's filter, and the blend on top of grpo / rloo."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from trainer.methods.advantages import ADVANTAGES
from trainer.methods.axes import HOOK_POINTS
from trainer.methods.step_credit import (
    STEP_CREDIT,
    ProfFilterParams,
    StepCreditFields,
    StepCreditInputs,
    StepCreditOutput,
    StepCreditParams,
    prof_keep,
    step_rewards,
)
from trainer.methods.token_credit import TOKEN_CREDIT, CreditInputs

NAN = float("nan")
RAW = StepCreditParams(normalize="none")
EPS = StepCreditParams().eps


def inputs(
    spans: Sequence[Sequence[tuple[int, int]]],
    scores: Sequence[Sequence[float]],
    *,
    width: int,
    groups: Sequence[int] | None = None,
    correct: Sequence[bool] | None = None,
    mask: torch.Tensor | None = None,
    **config: Any,
) -> StepCreditInputs:
    n = len(spans)
    return StepCreditInputs(
        spans=spans,
        scores=scores,
        rewards=torch.tensor([1.0 if c else 0.0 for c in (correct or [True] * n)]),
        correct=torch.tensor(list(correct or [True] * n)),
        group_ids=torch.tensor(list(groups or [0] * n)),
        mask=torch.ones(n, width) if mask is None else mask,
        config=StepCreditFields(**config),
    )


def credit(name: str, data: StepCreditInputs, params: StepCreditParams = RAW) -> StepCreditOutput:
    return STEP_CREDIT.get(name)(torch.zeros(data.mask.shape), data, params)


THREE_STEPS = [[(0, 1), (1, 2), (2, 3)]] * 2
HACKED_AND_STEADY = [
    [1.0, 1.0, 0.0],
    [0.5, 0.5, 0.5],
]  # two good steps then a wrong one; three middling steps


def test_the_axis_has_the_four_aggregations_at_an_optional_hook_point_after_token_credit() -> None:
    assert STEP_CREDIT.names() == ["last", "mean", "min", "sum"]
    points = list(HOOK_POINTS)
    assert points.index("step_credit") > points.index("token_credit")  # turn_credit sits between them
    assert not HOOK_POINTS["step_credit"].required


def test_sum_is_the_return_to_go_and_rewards_the_completion_that_ends_wrong() -> None:
    out = credit("sum", inputs(THREE_STEPS, HACKED_AND_STEADY, width=3))
    assert out.token_advantages.tolist() == [[2.0, 1.0, 0.0], [1.5, 1.0, 0.5]]
    assert out.keep is None


def test_pure_min_form_takes_the_minimum_of_this_and_later_steps() -> None:
    out = credit("min", inputs(THREE_STEPS, HACKED_AND_STEADY, width=3))
    assert out.token_advantages.tolist() == [
        [0.0, 0.0, 0.0],
        [0.5, 0.5, 0.5],
    ]  # sum ranked these the other way


def test_mean_and_last() -> None:
    data = inputs(THREE_STEPS, HACKED_AND_STEADY, width=3)
    assert credit("mean", data).token_advantages[0].tolist() == pytest.approx([2 / 3, 0.5, 0.0])
    assert credit("last", data).token_advantages.tolist() == [[0.0, 0.0, 0.0], [0.5, 0.5, 0.5]]


def test_every_token_of_a_step_carries_its_value() -> None:
    out = credit("sum", inputs([[(0, 2), (2, 5)]], [[0.25, 0.5]], width=6))
    assert out.token_advantages.tolist() == [[0.75, 0.75, 0.5, 0.5, 0.5, 0.0]]  # token 5: no step


def test_group_normalisation_is_over_the_groups_tokens_with_bessels_std() -> None:
    data = inputs(
        [[(0, 2)], [(0, 2)], [(0, 1)], [(0, 1)]], [[1.0], [0.0], [0.9], [0.3]], width=2, groups=[0, 0, 1, 1]
    )
    out = credit("sum", data, StepCreditParams())
    a = 0.5 / (math.sqrt(1 / 3) + EPS)  # group 0: tokens 1, 1, 0, 0: mean 0.5, var 1/3
    b = 0.3 / (math.sqrt(0.18) + EPS)  # group 1: tokens 0.9, 0.3: mean 0.6, var 0.18
    expected = torch.tensor([[a, a], [-a, -a], [b, 0.0], [-b, 0.0]])
    torch.testing.assert_close(out.token_advantages, expected)


def test_a_long_step_weighs_by_its_tokens_in_the_group_mean() -> None:
    data = inputs([[(0, 3)], [(0, 1)]], [[1.0], [0.0]], width=3)  # tokens 1, 1, 1, 0: mean 0.75
    out = credit("sum", data, StepCreditParams(normalize="group", eps=1.0))
    std = math.sqrt((3 * 0.25**2 + 0.75**2) / 3)
    assert out.token_advantages[0, 0].item() == pytest.approx(0.25 / (std + 1.0))
    assert out.token_advantages[1, 0].item() == pytest.approx(-0.75 / (std + 1.0))


def test_an_absent_score_gets_no_credit_and_is_never_read_as_a_wrong_step() -> None:
    data = inputs([[(0, 1), (1, 2)], [(0, 1), (1, 2), (2, 3)]], [[1.0, NAN], [0.5, NAN, 0.25]], width=3)
    out = credit("min", data)
    assert out.token_advantages.tolist() == [
        [1.0, 0.0, 0.0],
        [0.25, 0.0, 0.25],
    ]  # 0-as-bad would give 0 at [0, 0]
    assert credit("sum", data).token_advantages.tolist() == [[1.0, 0.0, 0.0], [0.75, 0.0, 0.25]]


def test_absent_tokens_stay_out_of_the_group_statistics() -> None:
    with_absent = inputs([[(0, 1), (1, 2)], [(0, 2)]], [[1.0, NAN], [0.0]], width=2)
    without = inputs([[(0, 1)], [(0, 2)]], [[1.0], [0.0]], width=2)
    params = StepCreditParams()
    assert torch.equal(
        credit("sum", with_absent, params).token_advantages, credit("sum", without, params).token_advantages
    )


def test_a_completion_with_no_present_score_gets_nothing() -> None:
    out = credit(
        "sum", inputs([[(0, 2)], [(0, 2)], [(0, 2)]], [[NAN], [1.0], [0.0]], width=2), StepCreditParams()
    )
    assert out.token_advantages[0].tolist() == [0.0, 0.0]
    assert out.token_advantages[1, 0].item() == pytest.approx(-out.token_advantages[2, 0].item())


def test_tokens_outside_the_loss_mask_get_no_credit_nor_enter_the_statistics() -> None:
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    masked = inputs([[(0, 3)], [(0, 3)]], [[1.0], [0.0]], width=3, mask=mask)
    out = credit("sum", masked, StepCreditParams())
    assert out.token_advantages[0, 2].item() == 0.0
    std = math.sqrt((2 * 0.6**2 + 3 * 0.4**2) / 4)  # 5 tokens in the mask: mean 0.4
    assert out.token_advantages[0, 0].item() == pytest.approx(0.6 / (std + EPS))
    assert out.token_advantages[1, 0].item() == pytest.approx(-0.4 / (std + EPS))


def test_spans_past_the_batch_width_are_cut() -> None:
    out = credit("sum", inputs([[(0, 1), (1, 9)]], [[0.5, 0.5]], width=2))
    assert out.token_advantages.tolist() == [[1.0, 0.5]]


def test_success_gating_credits_only_correct_rollouts_normalised_among_them() -> None:
    data = inputs(
        [[(0, 1)]] * 3, [[1.0], [0.0], [0.2]], width=1, correct=[True, True, False], success_gated=True
    )
    out = credit("sum", data, StepCreditParams())
    a = 0.5 / (math.sqrt(0.5) + EPS)  # the two correct ones: 1.0, 0.0
    assert out.token_advantages[:, 0].tolist() == pytest.approx([a, -a, 0.0])


def test_delta_telescopes_so_the_sum_from_a_step_is_its_score() -> None:
    assert step_rewards([0.9, 0.6, 0.3], clip=None, delta=True) == pytest.approx([0.3, 0.3, 0.3])
    out = credit("sum", inputs([[(0, 1), (1, 2), (2, 3)]], [[0.9, 0.6, 0.3]], width=3, delta=True))
    assert out.token_advantages.tolist() == [pytest.approx([0.9, 0.6, 0.3])]


def test_delta_skips_absent_steps() -> None:
    assert step_rewards([0.9, NAN, 0.3], clip=None, delta=True)[::2] == pytest.approx([0.6, 0.3])


def test_clipping_makes_no_step_pay() -> None:
    assert step_rewards([1.0, 0.7, 0.2], clip=0.5, delta=False) == pytest.approx([0.0, 0.0, -0.3])


def test_many_good_steps_outscore_few_under_sum_but_not_under_clip_or_delta() -> None:
    spans = [[(k, k + 1) for k in range(10)], [(0, 1), (1, 2)]]
    scores = [[0.9] * 10, [0.9, 0.9]]

    def first_token(**config: Any) -> list[float]:
        return credit("sum", inputs(spans, scores, width=10, **config)).token_advantages[:, 0].tolist()

    assert first_token() == pytest.approx([9.0, 1.8])  # the padded one wins
    assert first_token(clip=0.5) == [0.0, 0.0]
    assert first_token(delta=True) == pytest.approx([0.9, 0.9])
    assert first_token(clip=0.95, delta=True) == pytest.approx([-0.05, -0.05])  # clipped, then differenced


def test_prof_keeps_high_scored_correct_and_low_scored_incorrect_balanced() -> None:
    means = [[0.9], [0.1], [0.5], [0.7], [0.3], [0.8], [0.2], [0.6]]
    correct = [True] * 6 + [False] * 2
    assert prof_keep(means, correct, [0] * 8, 0.5) == [True, False, False, False, False, True, True, True]
    mostly_wrong = [True] + [False] * 7  # one correct: kept, and three of the lowest incorrect
    kept = prof_keep(means, mostly_wrong, [0] * 8, 0.5)
    assert [i for i, k in enumerate(kept) if k] == [0, 1, 4, 6]


def test_prof_balances_each_group_on_its_own_and_ranks_unscored_rollouts_last() -> None:
    scores = [[1.0], [NAN], [0.4, 0.6], [0.0], [NAN], [0.9], [0.1], [0.5]]
    correct = [True, True, True, False, False, False, True, False]
    kept = prof_keep(scores, correct, [0, 0, 0, 0, 1, 1, 1, 1], 0.5)
    assert kept == [
        True,
        False,
        False,
        True,
        False,
        False,
        True,
        True,
    ]  # group 1: unscored incorrect ranks last


def test_prof_with_only_one_outcome_keeps_that_side() -> None:
    assert prof_keep([[0.1], [0.9], [0.5], [0.7]], [True] * 4, [0] * 4, 0.5) == [False, True, False, True]


def test_prof_filter_keeps_outcome_advantages_and_returns_the_keep_mask() -> None:
    data = inputs(
        [[(0, 2)]] * 4,
        [[0.9], [0.2], [0.1], [0.8]],
        width=2,
        correct=[True, True, False, False],
        prof_filter=ProfFilterParams(keep_fraction=0.5),
    )
    outcome = torch.tensor([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0], [-1.0, -1.0]])
    out = STEP_CREDIT.get("min")(outcome, data, StepCreditParams())
    assert out.keep is not None and out.keep.tolist() == [True, False, True, False]
    assert out.token_advantages.tolist() == [[1.0, 1.0], [0.0, 0.0], [-1.0, -1.0], [0.0, 0.0]]
    assert out.metrics["process/prof_kept_frac"] == 0.5


@pytest.mark.parametrize("estimator", ["grpo", "rloo"])
def test_process_credit_is_added_on_top_of_any_estimators_token_advantages(estimator: str) -> None:
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0])
    groups = torch.tensor([0, 0, 0, 0])
    entry = ADVANTAGES.entry(estimator)
    outcome = ADVANTAGES.get(estimator)(rewards, groups, entry.parse_params({}))  # [N]
    mask = torch.ones(4, 2)
    token_outcome = TOKEN_CREDIT.get("uniform")(outcome, CreditInputs(mask, mask, mask), None)  # [N, T]
    data = inputs(
        [[(0, 1), (1, 2)]] * 4,
        [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],
        width=2,
        correct=[True, False, True, False],
        weight=0.5,
    )
    out = STEP_CREDIT.get("min")(token_outcome, data, StepCreditParams())
    # min-form values: [1, 1], [0, 0], [0, 1], [0, 0]: tokens mean 3/8, Bessel var = (3 * 25/64 + 5 * 9/64) / 7
    std = math.sqrt((3 * (5 / 8) ** 2 + 5 * (3 / 8) ** 2) / 7)
    hi, lo = (5 / 8) / (std + EPS), (-3 / 8) / (std + EPS)
    process = torch.tensor([[hi, hi], [lo, lo], [lo, hi], [lo, lo]])
    torch.testing.assert_close(out.token_advantages, token_outcome + 0.5 * process)
    zero_weight = STEP_CREDIT.get("min")(
        token_outcome, inputs(data.spans, data.scores, width=2, weight=0.0), RAW
    )
    assert torch.equal(zero_weight.token_advantages, token_outcome)


def test_the_credit_metrics() -> None:
    out = credit(
        "sum", inputs([[(0, 1)], [(0, 1), (1, 2)]], [[1.0], [0.0, NAN]], width=2), StepCreditParams()
    )
    assert out.metrics["process/credit_token_frac"] == 0.5  # two of four tokens carry a value
    assert out.metrics["process/credit_abs_mean"] == pytest.approx(0.5 / (math.sqrt(0.5) + EPS))
