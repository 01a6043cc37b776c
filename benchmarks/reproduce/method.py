"""What a row of the reproduction table is: a method, the claim its paper makes, and what we measure.

A ``Method`` names its seed paper (``'001:L23'`` = line 23 of shared/seeds/001_*.txt), copies the claim
from shared/METHODS.md, says which measured quantity the claim is about and in which direction it should
move against plain GRPO, and gives the config overrides that turn the shared baseline into the method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Direction = Literal["lower", "higher", "same"]


@dataclass(frozen=True)
class PrepareContext:
    """Handed to ``Method.prepare``: where to write files, and the baseline config it will modify."""

    workdir: Path  # a directory the method may write into (kept between invocations, like the cache)
    baseline_config: dict[str, Any]  # the baseline experiment as a plain dict (before the method's overrides)
    seed: int


@dataclass(frozen=True)
class Method:
    """One row of the reproduction table.

    ``overrides`` are deep-merged onto the shared plain-GRPO baseline (benchmarks/reproduce/baseline.py).
    ``baseline_overrides`` changes the comparison arm too, for claims about a composition (e.g.
    "ThinkPrior + DAPO vs DAPO"); both arms then share them. ``prepare`` may build a file the method needs
    (an anchor model's pass rates) and returns extra overrides; it runs once per seed before training.
    """

    name: str
    paper: str  # seed reference, e.g. '001:L23'
    claim: str  # copied from shared/METHODS.md
    measure: str  # key of benchmarks.reproduce.measures.MEASURES the claim is about
    direction: Direction  # how ``measure`` should move against the baseline if the claim holds here
    overrides: dict[str, Any]
    baseline_overrides: dict[str, Any] = field(default_factory=dict)
    figures: tuple[str, ...] = ("final_accuracy", "final_reward")  # more measures shown beside ``measure``
    prepare: Callable[[PrepareContext], dict[str, Any]] | None = None
    note: str = ""  # how this reproduction differs from the paper's setting (shown under the table)
