"""Reads for the rollout browser page: the steps that have rollouts, and one page of table rows with the
verifier details (the REST list defers ``details``; the table shows them) and a length filter.

Within a chosen step the most informative groups come first: those whose advantages differ most (then whose
rewards differ most). A group whose completions all scored the same has zero advantages under GRPO and
teaches the policy nothing (DAPO's dynamic sampling drops such groups), so it is not what a page opens on."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Max, Min, OuterRef, QuerySet, Subquery

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
        Rollout.objects.filter(run=run)
        .order_by("finish_reason")
        .values_list("finish_reason", flat=True)
        .distinct()
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
    if filters.get("step") is not None:  # one step's groups; across all steps the table stays in step order
        rows = most_informative_groups_first(rows, run=run)
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


def _group_spread(run: Run, field: str) -> Subquery:
    """max - min of ``field`` over the whole group of the outer row (every rollout of it, whatever the filters)."""
    group = (
        Rollout.objects.filter(run=run, step=OuterRef("step"), group=OuterRef("group"))
        .order_by()
        .values("group")
    )
    return Subquery(group.annotate(spread=Max(field) - Min(field)).values("spread")[:1])


def most_informative_groups_first(rows: QuerySet[Rollout], *, run: Run) -> QuerySet[Rollout]:
    """``rows`` by step, then the groups with the widest advantage spread first (ties: reward spread; groups
    without advantages, as an outside run may send, last), then group and sample index."""
    return rows.annotate(
        advantage_spread=_group_spread(run, "advantage"), reward_spread=_group_spread(run, "reward")
    ).order_by(
        "step",
        F("advantage_spread").desc(nulls_last=True),
        F("reward_spread").desc(nulls_last=True),
        "group",
        "sample_index",
    )
