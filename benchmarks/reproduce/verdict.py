"""Verdicts from paired statistics: one per part of a claim, adjusted across the whole table, and the row's.

Every claim part (``kind='claim'``) of every row is one test of one family: the table. Its p-values are adjusted
with Holm's step-down method across the family, shown beside the raw ones, and the verdicts read the adjusted
ones, so the chance that any "as claimed" or "opposite" in the table is a fluke stays at 5% (unadjusted, one
part in twenty of a method that does nothing would read as a difference).

- A part claiming a direction ('higher' / 'lower') is *as claimed* when the paired t test rejects "no
  difference" (adjusted p < 0.05) with the effect on the claimed side, *opposite* on the other side, and
  otherwise *no detectable difference*, stated with the minimum detectable effect.
- A part claiming no change ('same') is judged by equivalence, not by an interval that happens to hold zero:
  *as claimed* when the two one-sided tests (TOST) show the difference inside the measure's stated margin
  (adjusted p < 0.05; the 90% interval inside +-margin), *opposite* when the difference test rejects zero
  (adjusted), and otherwise *inconclusive* (neither shown equivalent nor shown different: too few seeds or too
  much spread for the margin).
- A ``mechanism`` part (true by construction) reads *mechanism check: holds / fails* from its raw interval and
  is not evidence: it is out of the family and out of the row's verdict. An ``ablation`` part says which
  ingredient moved the number, from its raw interval, also out of both.

A row is *not applicable* when the method cannot act on this task (the reason is measured and given);
otherwise *as claimed* when every claim part is, *partly as claimed* when some are, *opposite* when none is
and one is opposite, *no detectable difference* when none is either, and *mechanism check* when it has no
claim part.
"""

from __future__ import annotations

import math
from typing import Any

from benchmarks.reproduce.stats import Paired, holm

AS_CLAIMED, OPPOSITE, UNDETECTED, PARTLY, NOT_APPLICABLE = (
    "as claimed",
    "opposite",
    "no detectable difference",
    "partly as claimed",
    "not applicable",
)
INCONCLUSIVE = "inconclusive"
MECHANISM = "mechanism check"
NOT_RUN = "not run"
ALPHA = 0.05


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _fmt(fmt: str, x: Any) -> str:
    return fmt.format(x) if _finite(x) else "n/a"


def part_verdict(
    direction: str, p: Paired, p_adjusted: float, p_equivalence_adjusted: float = math.nan
) -> str:
    """AS_CLAIMED, OPPOSITE, UNDETECTED or INCONCLUSIVE for one claim part from its (adjusted) p-values."""
    if p.n < 2 or not _finite(p_adjusted):
        return UNDETECTED if direction != "same" else INCONCLUSIVE
    different = p_adjusted < ALPHA
    if direction == "same":
        if _finite(p_equivalence_adjusted) and p_equivalence_adjusted < ALPHA:
            return AS_CLAIMED
        return OPPOSITE if different else INCONCLUSIVE
    if not different:
        return UNDETECTED
    measured = "higher" if p.effect > 0 else "lower"
    return AS_CLAIMED if measured == direction else OPPOSITE


def describe(direction: str, verdict: str, p: Paired, fmt: str, margin: float = 0.0) -> str:
    """The part's verdict in words, with the minimum detectable effect or the margin it was judged against."""
    mde = _fmt(fmt, p.mde)
    if direction == "same":
        m = fmt.format(margin)
        if verdict == AS_CLAIMED:
            return f"as claimed: equivalent within +-{m}"
        if verdict == OPPOSITE:
            return f"opposite: {'higher' if p.effect > 0 else 'lower'}"
        return f"inconclusive: neither equivalent within +-{m} nor different"
    if verdict == UNDETECTED and p.significant:
        return (
            f"no detectable difference after Holm's adjustment (the raw 95% interval excludes 0; minimum "
            f"detectable {mde} unadjusted)"
        )
    if verdict == UNDETECTED:
        return f"no detectable difference (minimum detectable {mde})"
    return verdict


def side_text(kind: str, direction: str, p: Paired, fmt: str) -> str:
    """A mechanism check's or an ablation's reading from the raw 95% interval (not a verdict on the paper)."""
    moved = "higher" if p.effect > 0 else "lower"
    if kind == "mechanism":
        ok = p.n >= 2 and not p.significant if direction == "same" else p.significant and moved == direction
        return f"{MECHANISM}: {'holds' if ok else 'fails'} (by construction, not evidence)"
    if p.n >= 2 and p.significant:
        return f"ablation: {moved} (raw 95% interval excludes 0)"
    return f"ablation: no detectable difference (minimum detectable {_fmt(fmt, p.mde)})"


def row_verdict(parts: list[str]) -> str:
    if not parts:
        return MECHANISM
    if all(v == AS_CLAIMED for v in parts):
        return AS_CLAIMED
    if AS_CLAIMED in parts:
        return PARTLY
    return OPPOSITE if OPPOSITE in parts else UNDETECTED


def judge(rows: list[dict[str, Any]], fmts: dict[str, str]) -> None:
    """Holm across every claim part of ``rows``; set each part's adjusted p-values, verdict and text, and each
    computed row's verdict (in place)."""
    parts = [
        part
        for row in rows
        if row["verdict"] not in (NOT_APPLICABLE, NOT_RUN)
        for comp in row.get("comparisons", [])
        for part in comp.get("parts", [])
    ]
    family: list[float] = []
    slots: list[tuple[dict[str, Any], str]] = []
    for part in parts:
        if part["kind"] != "claim":
            continue
        p_value = part["paired"].get("p_value")
        family.append(p_value if _finite(p_value) else math.nan)
        slots.append((part, "p_adjusted"))
        if part["direction"] == "same":
            family.append(part["p_equivalence"] if _finite(part.get("p_equivalence")) else math.nan)
            slots.append((part, "p_equivalence_adjusted"))
    for (part, name), value in zip(slots, holm(family), strict=True):
        part[name] = value if _finite(value) else None
    for part in parts:
        stats = Paired.from_json(part["paired"])
        fmt = fmts[part["measure"]]
        if part["kind"] != "claim":
            part.update(
                verdict=part["kind"], verdict_text=side_text(part["kind"], part["direction"], stats, fmt)
            )
            continue
        adjusted = part.get("p_adjusted")
        eq = part.get("p_equivalence_adjusted")
        verdict = part_verdict(
            part["direction"],
            stats,
            math.nan if adjusted is None else adjusted,
            math.nan if eq is None else eq,
        )
        part.update(
            verdict=verdict,
            verdict_text=describe(part["direction"], verdict, stats, fmt, part.get("margin") or 0.0),
            family_size=len(family),
        )
    for row in rows:
        if row["verdict"] in (NOT_APPLICABLE, NOT_RUN):
            continue
        claims = [
            p["verdict"]
            for c in row.get("comparisons", [])
            for p in c.get("parts", [])
            if p["kind"] == "claim"
        ]
        row["verdict"] = row_verdict(claims)
