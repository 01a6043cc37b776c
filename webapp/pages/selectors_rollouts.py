"""Reads for the rollout browser page: the steps that have rollouts, and one page of table rows with the
verifier details (the REST list defers ``details``; the table shows them) and a length filter."""

from __future__ import annotations

from typing import Any

from webapp.experiments.models import Rollout, Run
from webapp.experiments.selectors import rollouts_for_run

ROW_FIELDS = (
    "id", "step", "prompt_id", "group", "sample_index", "prompt", "completion", "answer", "finish_reason",
    "reward", "rewards", "correct", "details", "advantage", "length",
)  # fmt: skip
MAX_PAGE_SIZE = 200


def rollout_steps(*, run: Run) -> list[int]:
    """Every step that stored rollouts, ascending (a run may log rollouts only every N steps)."""
    return list(Rollout.objects.filter(run=run).order_by("step").values_list("step", flat=True).distinct())


def rollout_finish_reasons(*, run: Run) -> list[str]:
    return list(
        Rollout.objects.filter(run=run).order_by("finish_reason").values_list("finish_reason", flat=True).distinct()
    )


def rollout_rows(
    *,
    run: Run,
    filters: dict[str, Any],
    group: int | None = None,
    length_min: int | None = None,
    length_max: int | None = None,
    page: int = 1,
    page_size: int = 50,
) -> dict[str, Any]:
    """``{"count", "page", "page_size", "results"}``: the REST filters plus group and length, with details."""
    rows = rollouts_for_run(run=run, **filters)  # values() below reads only ROW_FIELDS
    if group is not None:
        rows = rows.filter(group=group)
    if length_min is not None:
        rows = rows.filter(length__gte=length_min)
    if length_max is not None:
        rows = rows.filter(length__lte=length_max)
    page_size = max(1, min(page_size, MAX_PAGE_SIZE))
    page = max(1, page)
    start = (page - 1) * page_size
    results = list(rows.values(*ROW_FIELDS)[start : start + page_size])
    return {"count": rows.count(), "page": page, "page_size": page_size, "results": results}
