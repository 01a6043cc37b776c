"""Reads for the rollout browser page: the steps that have rollouts, and one page of table rows with the
verifier details (the REST list defers ``details``; the table shows them) and a length filter.

Within a chosen step the most informative groups come first: those whose advantages differ most (then whose
rewards differ most). A group whose completions all scored the same has zero advantages under GRPO and
teaches the policy nothing (DAPO's dynamic sampling drops such groups), so it is not what a page opens on.

A rollout scored step by step (process rewards) carries ``details["process"]``; ``rollout_process`` checks it
against the rollout's tokens for the token view, which draws the steps as bands (static/js/token_view.js). A
multi-turn rollout carries ``details["episode"]`` (webapp/pages/selectors_episodes.py); the table says how many
turns it took."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Max, Min, OuterRef, QuerySet, Subquery

from webapp.experiments.models import Rollout, Run
from webapp.experiments.selectors import rollouts_for_run
from webapp.pages.selectors_episodes import episode_turn_count

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
    results = [table_row(row) for row in rows.values(*ROW_FIELDS)[start : start + page_size]]
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


# --- a rollout's steps (process rewards) ------------------------------------------------------------------

MAX_STEPS = 64  # steps shown over one completion; a record with more is refused, not truncated
MAX_NAME = 64  # characters of a scorer or segmenter name
MAX_NOTE = 500  # characters of the scorer's note (why a score is absent)
UNREADABLE = "step data unreadable"


class _Unreadable(ValueError):
    """Why a rollout's ``details["process"]`` cannot be drawn."""


def _index(value: Any, n_steps: int, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n_steps:
        raise _Unreadable(f"{what} is not a step of this rollout")
    return value


def _name(value: Any, limit: int = MAX_NAME) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _steps(process: dict[str, Any], token_count: int) -> list[dict[str, Any]]:
    spans, scores = process.get("spans"), process.get("scores")
    if not isinstance(spans, list) or not isinstance(scores, list):
        raise _Unreadable("spans and scores must be lists")
    if len(spans) > MAX_STEPS:
        raise _Unreadable(f"{len(spans)} steps, more than the {MAX_STEPS} the token view draws")
    if len(scores) != len(spans):
        raise _Unreadable(f"{len(scores)} scores for {len(spans)} steps")
    steps: list[dict[str, Any]] = []
    previous_end = 0
    for k, (span, score) in enumerate(zip(spans, scores, strict=True)):
        if (
            not isinstance(span, list | tuple)
            or len(span) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in span)
        ):
            raise _Unreadable(f"step {k + 1}: a span is two token indices")
        start, end = span
        if not previous_end <= start < end <= token_count:
            raise _Unreadable(
                f"step {k + 1}: span [{start}, {end}) is out of order or outside the {token_count} tokens"
            )
        previous_end = end
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0
        ):
            raise _Unreadable(f"step {k + 1}: a score is a number in [0, 1] or null")
        steps.append({"start": start, "end": end, "score": None if score is None else float(score)})
    return steps


def rollout_process(*, details: Any, token_count: int) -> dict[str, Any] | None:
    """What the token view draws of a rollout's steps: None when the record has no ``details["process"]``;
    ``{"error": "step data unreadable", "reason"}`` when it is malformed (an outside run can send anything:
    the page must still open); else ``{"steps": [{"start", "end", "score"}], "blamed", "oracle_first_wrong",
    "scorer", "segmenter", "note"}`` with at most ``MAX_STEPS`` steps, each a half-open span over the completion's
    ``token_count`` tokens, in order and without overlap, and ``blamed`` / ``oracle_first_wrong`` step indices
    (0-based) or None. Nothing is stored: this only checks and reshapes what the trainer or the ingest API
    wrote (trainer/step/reporting.py)."""
    if not isinstance(details, dict) or "process" not in details:
        return None
    process = details["process"]
    try:
        if not isinstance(process, dict):
            raise _Unreadable("process is not an object")
        steps = _steps(process, token_count)
        return {
            "steps": steps,
            "blamed": _index(process.get("blamed"), len(steps), "blamed"),
            "oracle_first_wrong": _index(process.get("oracle_first_wrong"), len(steps), "oracle_first_wrong"),
            "scorer": _name(process.get("scorer")),
            "segmenter": _name(process.get("segmenter")),
            "note": _name(process.get("note"), MAX_NOTE),
        }
    except _Unreadable as exc:
        return {"error": UNREADABLE, "reason": str(exc)}


# Detail sections the page draws from their own checked copy (the token view and the episode view), never
# from the raw record: ``rollout_process`` and ``selectors_episodes.rollout_episode``.
DRAWN_DETAILS = ("process", "episode")


def without_drawn_details(row: dict[str, Any]) -> dict[str, Any]:
    """A row with ``details["process"]`` and ``details["episode"]`` left out: the page reads its checked copies
    of them, the table does not show them, and an outside run's copy (tool results and all) must not ride along
    in every page of rows."""
    details = row.get("details")
    if isinstance(details, dict) and any(key in details for key in DRAWN_DETAILS):
        row["details"] = {k: v for k, v in details.items() if k not in DRAWN_DETAILS}
    return row


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row of the table: ``turns`` (how many turns a multi-turn rollout took, else None) and the details
    without the sections the page draws elsewhere."""
    row["turns"] = episode_turn_count(row.get("details"))
    return without_drawn_details(row)
