"""What a row of the reproduction table is: a method, the parts of its paper's claim, and what we measure.

A ``Method`` names its seed paper (``'001:L23'`` = line 23 of shared/seeds/001_*.txt), copies the claim from
shared/METHODS.md, splits it into ``parts`` (each a measured quantity and the direction it should move
against the comparison arm if the claim holds here), and gives the config overrides that turn the shared
baseline into the method. Every part is judged; so is every cost (rollouts, tokens, seconds, offline passes
included), which the table adds to each row by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from benchmarks.reproduce.measures import ArmResult

Direction = Literal["lower", "higher", "same"]
# (store, the comparison arm's config) -> (extra overrides of the method arm, the offline pass's cost)
Prepare = Callable[[Path, dict[str, Any]], tuple[dict[str, Any], dict[str, float]]]
# (method arms, comparison arms) of the probe seeds -> why the method cannot act here, or None when it does
Applicability = Callable[[list["ArmResult"], list["ArmResult"]], "str | None"]


@dataclass(frozen=True)
class ClaimPart:
    """One checkable part of a claim: ``measure`` should move ``direction`` against the comparison arm."""

    measure: str  # key of benchmarks.reproduce.measures.MEASURES
    direction: Direction
    text: str  # the part in a few words, e.g. "fewer silent groups early"


@dataclass(frozen=True)
class Method:
    """One row of the reproduction table.

    ``overrides`` are deep-merged onto the shared plain-GRPO baseline (benchmarks/reproduce/baseline.py).
    ``baseline_overrides`` changes the comparison arm too, for claims about a composition (e.g.
    "ThinkPrior + DAPO vs DAPO"); both arms then share them, and ``comparison`` names that arm. ``prepare``
    runs an offline pass the method needs (an anchor model's pass rates) once, and its cost is charged to
    every method arm. ``not_applicable`` says why the method cannot act on this task at all (no arm is
    trained); ``applicable`` decides it from the probe seeds' arms (the remaining seeds are then skipped).
    """

    name: str
    paper: str  # seed reference, e.g. '001:L23'
    claim: str  # copied from shared/METHODS.md
    parts: tuple[ClaimPart, ...]
    overrides: dict[str, Any]
    baseline_overrides: dict[str, Any] = field(default_factory=dict)
    comparison: str = "plain GRPO"
    figures: tuple[str, ...] = ()  # more measures shown beside the claim's parts
    prepare: Prepare | None = None
    not_applicable: str = ""
    applicable: Applicability | None = None
    note: str = ""  # how this reproduction differs from the paper's setting (shown under the table)

    @property
    def measure(self) -> str:
        return self.parts[0].measure

    @property
    def direction(self) -> Direction:
        return self.parts[0].direction
