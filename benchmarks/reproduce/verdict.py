"""Paired comparison over seeds -> the "direction measured here" column, and the markdown table.

Each seed's method value is paired with the same seed's baseline value. A difference is *clear* when every
seed's difference has the same sign and the mean difference is at least twice its standard error
(sd / sqrt(n)); otherwise the table says "no clear difference with the seed spread". This is a coarse rule
for 3 seeds, meant to stop a reader from over-reading noise, not a significance test.
"""

from __future__ import annotations

import math
import statistics
from typing import Any


def paired_direction(method: list[float], baseline: list[float]) -> str:
    """'higher', 'lower' or 'unclear' for method vs baseline over paired seeds."""
    diffs = [m - b for m, b in zip(method, baseline, strict=True)]
    if len(diffs) < 2 or not all(math.isfinite(d) for d in diffs):
        return "unclear"
    mean = statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(len(diffs))
    same_sign = all(d > 0 for d in diffs) or all(d < 0 for d in diffs)
    if same_sign and abs(mean) >= 2 * se:
        return "higher" if mean > 0 else "lower"
    return "unclear"


def verdict(expected: str, measured: str) -> str:
    """The table's wording for what was measured against what the paper claims."""
    if measured == "unclear":
        return "as claimed (no clear difference)" if expected == "same" else "no clear difference with the seed spread"
    if expected == "same":
        return f"opposite (clearly {measured})"
    return "as claimed" if measured == expected else "opposite"


def mean_sd(values: list[float], fmt: str) -> str:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return "n/a"
    if len(finite) == 1:
        return fmt.format(finite[0])
    return f"{fmt.format(statistics.fmean(finite))} ± {fmt.format(statistics.stdev(finite))}"


_SHORT = {"higher": "clearly higher", "lower": "clearly lower", "unclear": "no clear difference"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """One line per method: claim, direction expected and measured, figures (method vs baseline)."""
    lines = [
        "| method | paper | claim (METHODS.md) | measured quantity | claimed direction | direction measured here | figures: method vs comparison arm (mean ± sd over seeds; paired direction) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        figures = "; ".join(
            f"{f['measure']}: {f['method']} vs {f['baseline']} ({_SHORT[f['direction']]})" for f in row["figures"]
        )
        seeds = " ".join(str(s) for s in row.get("seeds", []))
        lines.append("| " + " | ".join(_cell(str(x)) for x in (
            f"{row['method']} ({row.get('steps', '?')} steps; seeds {seeds})", f"`{row['paper']}`", row["claim"], row["measure"], row["direction"], row["verdict"], figures,
        )) + " |")
    return "\n".join(lines)
