"""Agreement on pairwise preferences, the final decision of an item, and where people disagree.

Django-free so it is tested on plain values. Judgements are ``item id -> annotator id -> choice`` with a
choice in left / right / tie / both_bad, submitted ones only.

"Both bad" says neither completion is acceptable, not which is better, so it is not a point on the
left / tie / right outcome. The three-outcome figures leave those judgements out (an item then counts
only if two or more people still judged it left, right or tie), and a second Krippendorff's alpha treats
"both bad" as a fourth category, on every judgement. Both figures are shown, and the page says which is
which.

- Share of agreeing pairs: over the items judged by two or more people, every pair of two annotators on
  one item is a pair; the share that gave the same choice (the pairwise percent agreement).
- Cohen's kappa (Cohen 1960): for each two annotators, over the items both judged, (p_o - p_e) /
  (1 - p_e) with p_e from each one's own category shares. Only annotator pairs with at least
  ``MIN_SHARED`` shared items count (fewer makes kappa noise); the mean over those is reported, or "not
  enough shared items" when no pair has that many. Undefined (p_e = 1: both always gave the one same
  choice) is left out of the mean and said.
- Krippendorff's alpha, nominal, from the ``krippendorff`` package (agreement.krippendorff_alpha).

The final decision of an item: the adjudicated choice, else the majority of the submitted choices; a tie
in votes (1 left, 1 right) is unresolved, and so is an item nobody submitted.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from webapp.annotation.agreement import krippendorff_alpha

CHOICES = ("left", "right", "tie", "both_bad")
THREE = ("left", "right", "tie")
MIN_SHARED = 10  # items two annotators must share before their Cohen's kappa counts

# item id -> annotator id -> choice
Judgements = Mapping[int, Mapping[int, str]]


@dataclass(frozen=True)
class KappaPair:
    first: int  # annotator ids
    second: int
    shared: int
    kappa: float | None  # None: undefined (both gave one same choice throughout) or too few shared items


@dataclass(frozen=True)
class PairwiseAgreement:
    agreeing_share: float | None  # share of agreeing annotator pairs (three outcomes)
    annotator_pairs: int  # annotator pairs behind that share
    items: int  # items judged left/right/tie by two or more people
    kappa: float | None  # mean Cohen's kappa over annotator pairs with >= MIN_SHARED shared items
    kappa_pairs: list[KappaPair] = field(default_factory=list)
    kappa_note: str = ""
    alpha: float | None = None  # Krippendorff's alpha, nominal, left / right / tie
    alpha_note: str = ""
    alpha_four: float | None = None  # ... with both_bad as a fourth category
    alpha_four_items: int = 0
    alpha_four_note: str = ""
    both_bad: int = 0  # judgements of "both bad" (left out of the three-outcome figures)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _restricted(judgements: Judgements, categories: Sequence[str]) -> dict[int, dict[int, str]]:
    return {item: {a: c for a, c in by.items() if c in categories} for item, by in judgements.items()}


def agreeing_share(judgements: Judgements) -> tuple[float | None, int, int]:
    """(share of agreeing annotator pairs, annotator pairs, items) over items with two or more choices."""
    agree = total = items = 0
    for by in judgements.values():
        if len(by) < 2:
            continue
        items += 1
        for x, y in itertools.combinations(by.values(), 2):
            total += 1
            agree += x == y
    return (agree / total if total else None), total, items


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two annotators' choices on the same items (None where p_e = 1)."""
    n = len(first)
    if n == 0 or n != len(second):
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    ca, cb = Counter(first), Counter(second)
    expected = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def mean_kappa(
    judgements: Judgements, *, min_shared: int = MIN_SHARED
) -> tuple[float | None, list[KappaPair], str]:
    """Mean Cohen's kappa over annotator pairs sharing ``min_shared`` or more items, every pair listed."""
    annotators = sorted({a for by in judgements.values() for a in by})
    pairs: list[KappaPair] = []
    for x, y in itertools.combinations(annotators, 2):
        shared = [item for item, by in sorted(judgements.items()) if x in by and y in by]
        if not shared:
            continue
        kappa = None
        if len(shared) >= min_shared:
            kappa = cohen_kappa([judgements[i][x] for i in shared], [judgements[i][y] for i in shared])
        pairs.append(KappaPair(x, y, len(shared), kappa))
    enough = [p for p in pairs if p.shared >= min_shared]
    if not enough:
        return None, pairs, f"Not enough shared items: no two annotators share {min_shared} judged items yet."
    defined = [p.kappa for p in enough if p.kappa is not None]
    if not defined:
        return None, pairs, "Kappa is undefined: each annotator pair gave one same choice throughout."
    note = (
        ""
        if len(defined) == len(enough)
        else (
            f"{len(enough) - len(defined)} annotator pair(s) left out: one same choice throughout (kappa undefined)."
        )
    )
    return sum(defined) / len(defined), pairs, note


def nominal_alpha(judgements: Judgements, categories: Sequence[str]) -> tuple[float | None, int, str]:
    """Krippendorff's alpha (nominal) over the items with two or more choices among ``categories``."""
    codes = {c: float(i) for i, c in enumerate(categories)}
    units = [item for item in sorted(judgements) if len(judgements[item]) >= 2]
    if not units:
        return None, 0, "No item has been judged by two or more people yet."
    coders = sorted({a for item in units for a in judgements[item]})
    matrix = [[codes[judgements[i][a]] if a in judgements[i] else None for i in units] for a in coders]
    alpha, note = krippendorff_alpha(matrix, "nominal")
    return alpha, len(units), note


def pairwise_agreement(judgements: Judgements, *, min_shared: int = MIN_SHARED) -> PairwiseAgreement:
    three = _restricted(judgements, THREE)
    share, annotator_pairs, items = agreeing_share(three)
    kappa, kappa_pairs, kappa_note = mean_kappa(three, min_shared=min_shared)
    alpha, _, alpha_note = nominal_alpha(three, THREE)
    alpha_four, four_items, four_note = nominal_alpha(_restricted(judgements, CHOICES), CHOICES)
    both_bad = sum(1 for by in judgements.values() for c in by.values() if c == "both_bad")
    return PairwiseAgreement(
        agreeing_share=share, annotator_pairs=annotator_pairs, items=items, kappa=kappa,
        kappa_pairs=kappa_pairs, kappa_note=kappa_note, alpha=alpha, alpha_note=alpha_note,
        alpha_four=alpha_four, alpha_four_items=four_items, alpha_four_note=four_note, both_bad=both_bad,
    )  # fmt: skip


def majority(choices: Sequence[str]) -> str | None:
    """The choice more people gave than any other; None for no choice or a tie in votes."""
    top = Counter(choices).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def final_decision(choices: Sequence[str], adjudicated: str | None) -> str | None:
    """The adjudicated choice, else the majority of the submitted choices (None: unresolved)."""
    return adjudicated if adjudicated else majority(choices)


@dataclass(frozen=True)
class PairDisagreement:
    item_id: int
    position: int
    votes: dict[str, int]  # choice -> how many gave it
    minority_share: float  # 1 - (top choice's votes / judgements): 0.5 for 1 vs 1

    @property
    def judgements(self) -> int:
        return sum(self.votes.values())


def disagreements(judgements: Judgements, *, positions: Mapping[int, int]) -> list[PairDisagreement]:
    """Items judged by two or more people who did not all give one choice, most disputed first (largest
    minority share, then most judgements, then item order)."""
    found = []
    for item, by in judgements.items():
        votes = Counter(by.values())
        if len(by) < 2 or len(votes) < 2:
            continue
        share = 1.0 - max(votes.values()) / len(by)
        found.append(PairDisagreement(item, positions.get(item, 0), dict(sorted(votes.items())), share))
    return sorted(found, key=lambda d: (-d.minority_share, -d.judgements, d.position))


def label_agreement(final: Mapping[int, str | None], truth: Mapping[int, str]) -> tuple[float | None, int]:
    """Share of items whose final decision (left or right) picks the side the file labelled chosen."""
    judged = [item for item, side in truth.items() if side and final.get(item) in ("left", "right")]
    if not judged:
        return None, 0
    return sum(final[item] == truth[item] for item in judged) / len(judged), len(judged)
