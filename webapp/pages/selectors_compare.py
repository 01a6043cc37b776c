"""The compare page's config diff: each chosen run's config as dotted paths, one row per path.

An outside run's config is read through ``trainer.config.outside_names`` first, so TRL's ``beta`` and a
native run's ``algorithm.beta`` are one row (the cell says which outside name it was read from). A path an
outside run did not send is "not reported", not a difference: TRL's client sends only the fields set away
from TRL's defaults, and this config's defaults are not TRL's. A native config is complete, so a path one
native run lacks (another method chose other params) does differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trainer.config.outside_names import native_paths
from webapp.experiments.models import Run

NOT_REPORTED = "—"


@dataclass(frozen=True)
class DiffCell:
    text: str  # the value as JSON, or NOT_REPORTED
    outside_name: str = ""  # the outside trainer's own name for this path, when the value was read from one


@dataclass(frozen=True)
class DiffRow:
    path: str
    cells: tuple[DiffCell, ...]
    differs: bool  # the values the runs have disagree, or a native run lacks the path
    unreported: bool  # some outside run did not send it (and the values that were sent agree)

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(cell.text for cell in self.cells)


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """``{"training": {"lr": 1}}`` -> ``{"training.lr": 1}``; lists stay whole values."""
    if not isinstance(config, dict) or (prefix and not config):
        return {prefix: config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def comparable_config(run: Run) -> tuple[dict[str, Any], dict[str, str]]:
    """The run's config as native dotted paths, and path -> the outside name each was read from."""
    return native_paths(flatten(run.config if isinstance(run.config, dict) else {}), run.source)


def config_diff(runs: list[Run]) -> list[DiffRow]:
    read = [comparable_config(run) for run in runs]
    paths = sorted({path for flat, _ in read for path in flat})
    rows = []
    for path in paths:
        cells = tuple(
            DiffCell(json.dumps(flat[path]), origin.get(path, "")) if path in flat else DiffCell(NOT_REPORTED)
            for flat, origin in read
        )
        present = {cell.text for cell in cells if cell.text != NOT_REPORTED}
        missing = [run for run, (flat, _) in zip(runs, read, strict=True) if path not in flat]
        differs = len(present) > 1 or any(not run.is_external for run in missing)
        rows.append(
            DiffRow(path=path, cells=cells, differs=differs, unreported=bool(missing) and not differs)
        )
    return rows
