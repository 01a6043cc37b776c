"""Verdicts from paired statistics: one per part of a claim, and the row's from its parts.

A part claiming a direction ('higher' / 'lower') is *as claimed* when the 95% confidence interval of the
paired effect lies on the claimed side of zero, *opposite* when it lies on the other side, and otherwise
*no detectable difference*, stated together with the minimum detectable effect (a difference smaller than
that could be there unseen). A part claiming no change ('same') is *as claimed* when the interval holds zero,
again with the minimum detectable effect, and *opposite* when it excludes zero. With a 5% two-sided test per
part, about one part in twenty of a method that does nothing reads as a difference.

A row is *not applicable* when the method cannot act on this task (the reason is given); otherwise *as
claimed* when every part is, *opposite* when no part is and one is opposite, *no detectable difference* when
no part is either, and *partly as claimed* in between.
"""

from __future__ import annotations

from benchmarks.reproduce.stats import Paired

AS_CLAIMED, OPPOSITE, UNDETECTED, PARTLY, NOT_APPLICABLE = (
    "as claimed",
    "opposite",
    "no detectable difference",
    "partly as claimed",
    "not applicable",
)


def part_verdict(direction: str, p: Paired) -> str:
    """AS_CLAIMED, OPPOSITE or UNDETECTED for one part (``direction``: 'higher', 'lower' or 'same')."""
    if p.n < 2 or p.mde != p.mde:  # nan: too few seeds to say anything
        return UNDETECTED
    if direction == "same":
        return OPPOSITE if p.significant else AS_CLAIMED
    if not p.significant:
        return UNDETECTED
    measured = "higher" if p.effect > 0 else "lower"
    return AS_CLAIMED if measured == direction else OPPOSITE


def row_verdict(parts: list[str]) -> str:
    if parts and all(v == AS_CLAIMED for v in parts):
        return AS_CLAIMED
    if AS_CLAIMED in parts:
        return PARTLY
    return OPPOSITE if OPPOSITE in parts else UNDETECTED


def describe(direction: str, verdict: str, p: Paired, fmt: str) -> str:
    """The part's verdict in words, with the minimum detectable effect where nothing was detected."""
    mde = fmt.format(p.mde) if p.mde == p.mde else "n/a"
    if verdict == AS_CLAIMED and direction == "same":
        return f"as claimed: no detectable difference (minimum detectable {mde})"
    if verdict == UNDETECTED:
        return f"no detectable difference (minimum detectable {mde})"
    if verdict == OPPOSITE and direction == "same":
        return f"opposite: {'higher' if p.effect > 0 else 'lower'}"
    return verdict
