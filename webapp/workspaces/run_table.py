"""The rows of a project's runs table: each run's facts, its config as dotted scalar paths, and summaries of
the metrics asked for (webapp/experiments/metric_summaries.py), plus what the column chooser offers.

The page sorts, filters and groups in the browser, so one answer holds every row it shows: the newest
``MAX_TABLE_RUNS`` runs (``truncated`` says when a project has more). A run's config is some 130 paths,
nearly all the same in every run, so paths with one value in every run are sent once
(``config_shared``) and each row carries only the paths where runs differ: 1,000 rows stay a few
hundred kilobytes instead of several megabytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypedDict

from trainer.config.outside_names import PER_RUN_PATHS, native_paths
from webapp.experiments.metric_summaries import (
    SMOOTHING_WINDOW,
    Direction,
    check_summary_keys,
    metric_direction,
    metric_keys_of_runs,
    metric_summaries,
)
from webapp.experiments.models import Run
from webapp.teams.models import Project

MAX_TABLE_RUNS = 1000  # newest first
MAX_CONFIG_PATHS = 2000  # distinct paths offered over all rows
MAX_PATHS_PER_RUN = 1000  # an outside trainer's config can be any JSON object
MAX_CONFIG_DEPTH = 8  # deeper objects are shown as their JSON text
MAX_VALUE_TEXT = 200  # characters of one config value as the table shows it
MAX_METRIC_KEYS_OFFERED = 1000
# Paths that differ between runs without saying anything about how they trained (the run's name, folder,
# seed; trainer/config/outside_names.py): left out of the default columns (they can still be chosen).
UNINFORMATIVE_PATHS = PER_RUN_PATHS

ROW_FIELDS = (
    "id", "status", "phase", "source", "created_at", "step", "max_steps", "config",
    "experiment__id", "experiment__name", "created_by__username",
)  # fmt: skip

Scalar = str | int | float | bool | None


class RunRow(TypedDict):
    id: int
    experiment: dict[str, Any]
    status: str
    phase: str
    source: str
    source_label: str
    created_at: str
    created_by: str | None
    step: int
    max_steps: int
    config: dict[str, Scalar]  # only the paths not in config_shared
    metrics: dict[str, dict[str, Any]]


class RunTable(TypedDict):
    runs: list[RunRow]
    total: int
    limit: int
    truncated: bool
    config_paths: list[str]
    config_paths_truncated: bool
    config_shared: dict[str, Scalar]
    config_differing: list[str]
    metric_keys: list[str]
    metric_keys_truncated: bool
    metrics: dict[str, dict[str, Any]]
    smoothing_window: int


def _text(value: str) -> str:
    return value if len(value) <= MAX_VALUE_TEXT else value[: MAX_VALUE_TEXT - 1] + "…"


def _summarise_list(items: list[Any]) -> str:
    """A list as one cell: the ``name`` of each item for lists of ``{name, params}`` choices (verifiers,
    loss masks), else its JSON text; shortened either way."""
    if items and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return _text(", ".join(i["name"] for i in items))
    return _text(json.dumps(items, separators=(", ", ": "), default=str))


def flatten_config(config: Any) -> dict[str, Scalar]:
    """``{"training": {"learning_rate": 1e-6}}`` -> ``{"training.learning_rate": 1e-6}``; lists become one
    summarised text value, empty objects ``"{}"``, long text is shortened, at most ``MAX_PATHS_PER_RUN``.

    >>> flatten_config({"a": {"b": 1, "c": []}, "v": [{"name": "exact"}]})
    {'a.b': 1, 'a.c': '[]', 'v': 'exact'}
    """
    out: dict[str, Scalar] = {}

    def walk(value: Any, path: str, depth: int) -> None:
        if len(out) >= MAX_PATHS_PER_RUN:
            return
        if isinstance(value, dict) and value and depth < MAX_CONFIG_DEPTH:
            for key, child in value.items():
                walk(child, f"{path}.{key}" if path else str(key), depth + 1)
        elif isinstance(value, dict):
            out[path] = _text(json.dumps(value, default=str)) if value else "{}"
        elif isinstance(value, list):
            out[path] = _summarise_list(value)
        elif isinstance(value, str):
            out[path] = _text(value)
        elif value is None or isinstance(value, (bool, int, float)):
            out[path] = value
        else:
            out[path] = _text(str(value))

    if isinstance(config, dict):
        walk(config, "", 0)
    return out


def _split_shared(
    flat: list[dict[str, Scalar]], outside: list[bool]
) -> tuple[list[str], bool, dict[str, Scalar], list[str]]:
    """Every path (in the order configs list them), whether it was cut, the paths with one value in every
    run, and the paths whose values differ. ``1`` and ``1.0`` (and ``true``) count as different values,
    as JSON writes them. A path only outside runs lack (their trainer did not send it) is neither shared
    nor differing: each row that has it carries it."""
    order: dict[str, None] = {}
    for config in flat:
        order.update(dict.fromkeys(config))
    paths = list(order)
    truncated = len(paths) > MAX_CONFIG_PATHS
    paths = paths[:MAX_CONFIG_PATHS]
    shared: dict[str, Scalar] = {}
    differing: list[str] = []
    for path in paths:
        values = {json.dumps(c[path]) for c in flat if path in c}
        missing = [is_outside for c, is_outside in zip(flat, outside, strict=True) if path not in c]
        if len(values) == 1 and not missing:
            shared[path] = flat[0][path]
        elif len(values) > 1 or not all(missing):
            differing.append(path)
    return paths, truncated, shared, differing


def comparable_config(run: Run) -> dict[str, Scalar]:
    """The run's config as the table's dotted scalar paths; an outside run's known names read as native paths
    (``beta`` -> ``algorithm.beta``, trainer/config/outside_names.py)."""
    return native_paths(flatten_config(run.config), run.source)[0]


def run_table_for_project(*, project: Project, metric_keys: Sequence[str]) -> RunTable:
    """The newest ``MAX_TABLE_RUNS`` runs of ``project`` (the caller checked the user may read it) with
    summaries of ``metric_keys`` (at most MAX_SUMMARY_KEYS; InvalidInput otherwise)."""
    metric_keys = check_summary_keys(metric_keys)
    runs = Run.objects.filter(experiment__project=project)
    total = runs.count()
    rows = list(
        runs.select_related("experiment", "created_by")
        .only(*ROW_FIELDS)
        .order_by("-created_at", "-id")[:MAX_TABLE_RUNS]
    )
    chosen = Run.objects.filter(pk__in=[run.pk for run in rows])
    summaries = metric_summaries(runs=chosen, keys=metric_keys) if rows else {}
    keys, keys_truncated = (
        metric_keys_of_runs(runs=chosen, limit=MAX_METRIC_KEYS_OFFERED) if rows else ([], False)
    )
    flat = [comparable_config(run) for run in rows]
    split = _split_shared(flat, [run.is_external for run in rows]) if rows else ([], False, {}, [])
    paths, paths_truncated, shared, differing = split
    kept = set(paths)
    table_rows: list[RunRow] = [
        {
            "id": run.pk,
            "experiment": {"id": run.experiment_id, "name": run.experiment.name},
            "status": run.status,
            "phase": run.phase_text,
            "source": run.source,
            "source_label": run.get_source_display(),
            "created_at": run.created_at.isoformat(),
            "created_by": run.created_by.username if run.created_by else None,
            "step": run.step,
            "max_steps": run.max_steps,
            "config": {p: v for p, v in config.items() if p not in shared and p in kept},
            "metrics": {key: s.as_dict() for key, s in summaries.get(run.pk, {}).items()},
        }
        for run, config in zip(rows, flat, strict=True)
    ]
    directions: dict[str, Direction] = {key: metric_direction(key) for key in metric_keys}
    return {
        "runs": table_rows,
        "total": total,
        "limit": MAX_TABLE_RUNS,
        "truncated": total > len(rows),
        "config_paths": paths,
        "config_paths_truncated": paths_truncated,
        "config_shared": shared,
        "config_differing": [p for p in differing if p not in UNINFORMATIVE_PATHS] if len(rows) > 1 else [],
        "metric_keys": keys,
        "metric_keys_truncated": keys_truncated,
        "metrics": {key: {"direction": d} for key, d in directions.items()},
        "smoothing_window": SMOOTHING_WINDOW,
    }
