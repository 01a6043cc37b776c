"""From stored arms to the table: rows with paired statistics and verdicts, results.json, docs/reproduction.md
and the raw curves. Pure over the stored arms: the same store gives the same files, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.reproduce.arms import arm_key, load_arm, stored_path

if TYPE_CHECKING:
    from benchmarks.reproduce.run import RowPlan


def applicability(plan: RowPlan, store: Path) -> str | None:
    """Why the row's method cannot act here (static, or read from the stored probe seeds), or None."""
    from benchmarks.reproduce.run import PROBE_SEEDS

    method = plan.method
    if method.not_applicable:
        return method.not_applicable
    if method.applicable is None:
        return None
    probe = plan.pairs[:PROBE_SEEDS]
    paths = [(stored_path(store, arm_key(m)[0]), stored_path(store, arm_key(c)[0])) for _, c, m in probe]
    if not all(a.is_file() and b.is_file() for a, b in paths):
        return None  # not probed yet: train it
    return method.applicable([load_arm(a) for a, _ in paths], [load_arm(b) for _, b in paths])


def build_rows(plans, store):  # placeholder replaced below
    return [], {}


def write(places, rows, args):
    pass
