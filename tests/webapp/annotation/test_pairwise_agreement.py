"""Agreement on pairwise choices (Django-free), checked against values worked out by hand and published
examples: the share of agreeing pairs, Cohen's kappa, Krippendorff's alpha, the final decision, and the
ranking of disagreements."""

from __future__ import annotations

import pytest

from webapp.annotation.pairwise_agreement import (
    agreeing_share,
    cohen_kappa,
    disagreements,
    final_decision,
    label_agreement,
    majority,
    mean_kappa,
    nominal_alpha,
    pairwise_agreement,
)


def test_cohen_kappa_matches_the_textbook_example() -> None:
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_is_undefined_when_both_always_give_one_same_choice() -> None:
    assert cohen_kappa(["left"] * 12, ["left"] * 12) is None


def test_share_of_agreeing_pairs_counts_every_two_annotators_of_an_item() -> None:
    # item 1: three people, left/left/right -> 1 of 3 pairs agree; item 2: 2 agree; item 3: one person only
    judgements = {1: {10: "left", 11: "left", 12: "right"}, 2: {10: "tie", 11: "tie"}, 3: {10: "left"}}
    assert agreeing_share(judgements) == (pytest.approx(2 / 4), 4, 2)


def test_kappa_needs_ten_shared_items_per_annotator_pair() -> None:
    few = {i: {1: "left", 2: "right" if i == 0 else "left"} for i in range(9)}
    kappa, pairs, note = mean_kappa(few)
    assert kappa is None and note.startswith("Not enough shared items") and pairs[0].shared == 9
    # 10 shared: 6 agree left, 2 agree right, 2 differ -> p_o .8; shares a: 7L 3R, b: 7L 3R -> p_e .58
    a = ["left"] * 6 + ["right"] * 2 + ["left", "right"]
    b = ["left"] * 6 + ["right"] * 2 + ["right", "left"]
    enough = {i: {1: a[i], 2: b[i]} for i in range(10)}
    kappa, pairs, note = mean_kappa(enough)
    assert kappa == pytest.approx((0.8 - 0.58) / (1 - 0.58)) and note == ""


def test_alpha_is_krippendorffs_nominal_alpha() -> None:
    # two coders, four units: (L, L), (R, R), (L, R), (T, T) -> D_o = 2/8, D_e = 1 - sum n_c(n_c-1)/(n(n-1))
    # counts L3 R3 T2 of n = 8: D_e = 1 - (6 + 6 + 2) / 56 = 0.75; alpha = 1 - (2/8) / 0.75 = 2/3
    judgements = {1: {1: "left", 2: "left"}, 2: {1: "right", 2: "right"}, 3: {1: "left", 2: "right"},
                  4: {1: "tie", 2: "tie"}}  # fmt: skip
    alpha, items, note = nominal_alpha(judgements, ("left", "right", "tie"))
    assert alpha == pytest.approx(2 / 3) and items == 4 and note == ""


def test_both_bad_is_left_out_of_the_three_outcome_figures_and_a_fourth_category_of_the_second_alpha() -> (
    None
):
    judgements = {1: {1: "left", 2: "left"}, 2: {1: "both_bad", 2: "right"}, 3: {1: "right", 2: "right"},
                  4: {1: "both_bad", 2: "both_bad"}}  # fmt: skip
    result = pairwise_agreement(judgements)
    assert result.items == 2 and result.agreeing_share == 1.0 and result.both_bad == 3
    assert result.alpha == pytest.approx(1.0)  # units 1 and 3 only: both agree
    # four categories, all four units: L2 R3 B3 of n = 8; D_o = 2/8 (unit 2), D_e = 1 - (2 + 6 + 6) / 56
    assert result.alpha_four_items == 4 and result.alpha_four == pytest.approx(1 - 0.25 / 0.75)


def test_the_final_decision_is_the_adjudication_else_a_strict_majority() -> None:
    assert majority(["left", "left", "right"]) == "left"
    assert majority(["left", "right"]) is None  # a tie in votes is unresolved
    assert majority([]) is None
    assert final_decision(["left", "right"], "right") == "right"
    assert final_decision(["tie", "tie", "left"], None) == "tie"


def test_disagreements_rank_the_most_split_first() -> None:
    judgements = {
        1: {1: "left", 2: "left", 3: "right"},  # minority 1/3
        2: {1: "left", 2: "right"},  # minority 1/2
        3: {1: "tie", 2: "tie"},  # agree: not listed
        4: {1: "left", 2: "both_bad"},  # minority 1/2, later position
    }
    ranked = disagreements(judgements, positions={1: 0, 2: 1, 3: 2, 4: 3})
    assert [d.item_id for d in ranked] == [2, 4, 1]
    assert ranked[0].votes == {"left": 1, "right": 1} and ranked[2].minority_share == pytest.approx(1 / 3)


def test_agreement_with_a_files_label_counts_left_or_right_decisions_only() -> None:
    share, n = label_agreement(
        {1: "left", 2: "right", 3: "tie", 4: None}, {1: "left", 2: "left", 3: "left", 4: "right"}
    )
    assert (share, n) == (0.5, 2)
