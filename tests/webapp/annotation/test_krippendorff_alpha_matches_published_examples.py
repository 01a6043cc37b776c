"""Alpha against published worked examples.

Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability", Annenberg School for Communication,
University of Pennsylvania, section C ("Nominal data, any number of observers, missing data"): 4 observers,
12 units, values 1-5 with missing entries: alpha_nominal = 0.743, alpha_ordinal = 0.815,
alpha_interval = 0.849 (the ``krippendorff`` package's docstring reproduces the nominal and ordinal ones).
"""

from __future__ import annotations

import pytest

from webapp.annotation.agreement import criterion_alpha, krippendorff_alpha

N = None
KRIPPENDORFF_2011_C = [  # observers x units
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_reproduces_krippendorff_2011_section_c(level: str, published: float) -> None:
    alpha, note = krippendorff_alpha(KRIPPENDORFF_2011_C, level)  # type: ignore[arg-type]
    assert note == ""
    assert alpha == pytest.approx(published, abs=5e-4)


def test_criterion_alpha_counts_only_items_two_people_scored() -> None:
    # the same data as ratings: unit 12 has one value, so 11 items stand behind the number
    ratings = {
        unit: {
            coder: float(row[unit]) for coder, row in enumerate(KRIPPENDORFF_2011_C) if row[unit] is not None
        }
        for unit in range(12)
    }
    result = criterion_alpha(ratings, scale="binary")  # nominal
    assert result.items == 11
    assert result.level == "nominal"
    assert result.alpha == pytest.approx(0.743, abs=5e-4)


def test_likert_criteria_use_the_ordinal_level_and_ranges_the_interval_level() -> None:
    ratings = {
        u: {c: float(r[u]) for c, r in enumerate(KRIPPENDORFF_2011_C) if r[u] is not None} for u in range(12)
    }
    assert criterion_alpha(ratings, scale="likert5").alpha == pytest.approx(0.815, abs=5e-4)
    assert criterion_alpha(ratings, scale="range").alpha == pytest.approx(0.849, abs=5e-4)


def test_alpha_is_missing_with_a_reason_when_no_item_has_two_scores() -> None:
    result = criterion_alpha({1: {7: 1.0}, 2: {8: 0.0}}, scale="binary")
    assert result.alpha is None and result.items == 0
    assert "two or more people" in result.note


def test_alpha_is_missing_with_a_reason_when_every_score_is_the_same() -> None:
    result = criterion_alpha({1: {7: 1.0, 8: 1.0}, 2: {7: 1.0, 8: 1.0}}, scale="binary")
    assert result.alpha is None and result.items == 2
    assert "no variation" in result.note


def test_perfect_disagreement_on_binary_scores_is_negative() -> None:
    result = criterion_alpha({1: {7: 1.0, 8: 0.0}, 2: {7: 0.0, 8: 1.0}, 3: {7: 1.0, 8: 0.0}}, scale="binary")
    assert result.alpha is not None and result.alpha < 0
