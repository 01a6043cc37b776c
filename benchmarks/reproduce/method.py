"""What a row of the reproduction table is: a method, the parts of its paper's claim, the comparisons its paper
makes, and what we measure.

A ``Method`` names its seed paper (``'001:L23'`` = line 23 of shared/seeds/001_*.txt), copies the claim from
shared/METHODS.md, splits it into ``parts`` (each a measured quantity and the direction it should move against
the comparison arm if the claim holds here), and gives the config overrides that turn the shared baseline into
the method. A paper often compares with more than one thing (UECR with the strongest hybrid, OPD-then-RL with
pure OPD and the joint baselines): ``comparisons`` adds those, each against its own arm and with its own parts.
Every part is judged; so is every cost (rollouts, tokens, seconds, offline passes included).

A part is ``kind='claim'`` (evidence: it enters the table's Holm family and the row's verdict),
``'mechanism'`` (true by construction of the method, e.g. dynamic sampling has no silent group in its update:
checked and shown, never counted as evidence) or ``'ablation'`` (which ingredient moved the number: shown with
its interval, not a verdict on the paper).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from benchmarks.reproduce.store import PrepareSpec

if TYPE_CHECKING:
    from benchmarks.reproduce.measures import ArmResult

Direction = Literal["lower", "higher", "same"]
Kind = Literal["claim", "mechanism", "ablation"]
# (method arms, comparison arms) of the seeds read -> why the method cannot act here, or None when it can
Applicability = Callable[[list["ArmResult"], list["ArmResult"]], "str | None"]


@dataclass(frozen=True)
class ClaimPart:
    """One checkable part of a claim: ``measure`` should move ``direction`` against the comparison arm."""

    measure: str  # key of benchmarks.reproduce.measures.MEASURES
    direction: Direction
    text: str  # the part in a few words, e.g. "fewer silent groups early"
    kind: Kind = "claim"


@dataclass(frozen=True)
class Comparison:
    """One more comparison a row runs: an arm (``arm``: overrides on the baseline; ``role``: its short name in
    the table and the missing-arm messages) against which ``subject`` (default: the row's method arm; else
    these overrides) is judged on ``parts``."""

    role: str  # e.g. "opd": also the arm's role name
    label: str  # e.g. "OPD (the opd row's method arm)"
    arm: dict[str, Any]
    parts: tuple[ClaimPart, ...]
    subject: dict[str, Any] | None = None
    subject_role: str = "method"


@dataclass(frozen=True)
class Method:
    """One row of the reproduction table.

    ``overrides`` are deep-merged onto the shared plain-GRPO baseline (benchmarks/reproduce/baseline.py).
    ``baseline_overrides`` changes the comparison arm too, for claims about a composition (e.g.
    "ThinkPrior + DAPO vs DAPO"); both arms then share them, and ``comparison`` names that arm. ``prepare``
    declares an offline pass the method arm needs (ThinkPrior's anchor pass): keyed by its spec, run once at
    training time, its cost charged to every method arm. ``not_applicable`` says why the method cannot act on
    this task at all (no arm is trained); ``applicable`` decides it from the arms (the probe seeds while
    training; every stored seed in the table). ``family`` groups rows that are one effect seen several ways
    (the teacher rows): the table reports their pairwise differences together.
    """

    name: str
    paper: str  # seed reference, e.g. '001:L23' (results.json only: the table names the paper by ``cites``)
    claim: str  # copied from shared/METHODS.md
    parts: tuple[ClaimPart, ...]
    overrides: dict[str, Any]
    baseline_overrides: dict[str, Any] = field(default_factory=dict)
    comparison: str = "plain GRPO"
    comparisons: tuple[Comparison, ...] = ()
    figures: tuple[str, ...] = ()  # more measures shown beside the claim's parts
    prepare: PrepareSpec | None = None
    not_applicable: str = ""
    applicable: Applicability | None = None
    family: str = ""
    cites: str = ""  # the paper or method by name, as the table shows it (required: plan.discover_methods)
    note: str = ""  # how this reproduction differs from the paper's setting (shown under the table)

    @property
    def measure(self) -> str:
        return self.parts[0].measure

    @property
    def direction(self) -> Direction:
        return self.parts[0].direction
