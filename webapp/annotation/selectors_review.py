"""Reads for reviewing submitted work (owners and admins): where annotators disagree, one item with every
annotator's scores side by side, and one annotator's work against the others'.

Callers have checked the role (``selectors.task_get_for_manager``). Only submitted scores count, as for
agreement: a draft is not yet anyone's judgement.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models.functions import Left
from django.http import Http404

from webapp.annotation.disagreement import ItemSpread, item_spreads, ranked, spread_of
from webapp.annotation.machine_scorers import item_machine_scores
from webapp.annotation.models import (
    Adjudication,
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
)
from webapp.annotation.selectors import submitted_ratings
from webapp.core.errors import InvalidInput

PAGE_ROWS = 100
PROMPT_EXCERPT = 160
OPEN, PARTLY, RESOLVED, AGREED = "open", "partly", "resolved", "agreed"


@dataclass(frozen=True)
class Ranking:
    """The disagreement ranking of a task: what the view, its API and the review page's prev/next read."""

    criterion: str | None
    spreads: list[ItemSpread]  # most disputed first
    adjudicated: dict[int, dict[str, float]]  # item id -> criterion -> final score

    def state(self, spread: ItemSpread) -> str:
        """open / partly / resolved / agreed: whether the disagreement on the item has a final score."""
        final = self.adjudicated.get(spread.item_id, {})
        if self.criterion is not None:
            if self.criterion in final:
                return RESOLVED
            return OPEN if spread.criteria[self.criterion].range > 0 else AGREED
        disputed = spread.disputed
        if not disputed:
            return RESOLVED if final else AGREED
        settled = [name for name in disputed if name in final]
        return RESOLVED if len(settled) == len(disputed) else PARTLY if settled else OPEN

    def ids(self, *, hide_resolved: bool, keep: int | None = None) -> list[int]:
        return [
            s.item_id
            for s in self.spreads
            if not (hide_resolved and s.item_id != keep and self.state(s) == RESOLVED)
        ]


def checked_criterion(task: AnnotationTask, criterion: str | None) -> str | None:
    """``criterion`` when it is one of the task's (None or '' means overall); InvalidInput otherwise."""
    if not criterion:
        return None
    names = [c["name"] for c in task.criteria]
    if criterion not in names:
        message = f"No criterion {criterion!r} in this task; its criteria are {', '.join(names)}."
        raise InvalidInput(message, {"criterion": [message]})
    return criterion


def adjudicated_scores(*, task: AnnotationTask) -> dict[int, dict[str, float]]:
    final: dict[int, dict[str, float]] = defaultdict(dict)
    for item_id, criterion, score in Adjudication.objects.filter(item__task=task).values_list(
        "item_id", "criterion", "score"
    ):
        final[item_id][criterion] = score
    return dict(final)


def disagreement_ranking(*, task: AnnotationTask, criterion: str | None = None) -> Ranking:
    criterion = checked_criterion(task, criterion)
    positions = dict(AnnotationItem.objects.filter(task=task).values_list("pk", "position"))
    spreads = item_spreads(submitted_ratings(task=task), criteria=task.criteria, positions=positions)
    return Ranking(criterion, ranked(spreads, criterion=criterion), adjudicated_scores(task=task))


def disagreement_view(
    *, task: AnnotationTask, criterion: str | None = None, hide_resolved: bool = False, page: int = 1
) -> dict[str, Any]:
    """The ranked rows of one page (``PAGE_ROWS``), with the counts the view's header shows."""
    ranking = disagreement_ranking(task=task, criterion=criterion)
    states = [ranking.state(s) for s in ranking.spreads]
    shown = [
        (s, st)
        for s, st in zip(ranking.spreads, states, strict=True)
        if not (hide_resolved and st == RESOLVED)
    ]
    pages = max(1, math.ceil(len(shown) / PAGE_ROWS))
    if not 1 <= page <= pages:
        message = f"There {'is' if pages == 1 else 'are'} {pages} page{'s' if pages > 1 else ''} of items; pick 1 to {pages}."
        raise InvalidInput(message, {"page": [message]})
    rows = shown[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]
    excerpts = AnnotationItem.objects.filter(pk__in=[s.item_id for s, _ in rows]).annotate(
        excerpt=Left("prompt", PROMPT_EXCERPT)
    )
    prompts = dict(excerpts.values_list("pk", "excerpt"))
    on = ranking.criterion
    disputed = sum(1 for s in ranking.spreads if (s.criteria[on].range > 0 if on else s.disputed))
    return {
        "criterion": ranking.criterion,
        "hide_resolved": hide_resolved,
        "page": page,
        "pages": pages,
        "counts": {
            "items": AnnotationItem.objects.filter(task=task).count(),
            "scored_by_two_or_more": len(ranking.spreads),
            "disputed": disputed,
            "resolved": sum(1 for st in states if st == RESOLVED),
            "open": sum(1 for st in states if st in (OPEN, PARTLY)),
            "shown": len(shown),
        },
        "rows": [
            _row(ranking, s, st, prompts.get(s.item_id, ""), rank)
            for rank, (s, st) in enumerate(rows, (page - 1) * PAGE_ROWS + 1)
        ],
    }


def _row(ranking: Ranking, spread: ItemSpread, state: str, prompt: str, rank: int) -> dict[str, Any]:
    chosen = spread.criteria[ranking.criterion] if ranking.criterion else None
    return {
        "rank": rank,
        "item_id": spread.item_id,
        "position": spread.position,
        "prompt": prompt[:PROMPT_EXCERPT],
        "annotators": spread.annotators,
        "spread": chosen.range if chosen else round(spread.overall, 6),
        "std": chosen.std if chosen else round(spread.overall_std, 6),
        "criteria": [
            {
                "criterion": name,
                "range": s.range,
                "std": s.std,
                "low": s.low,
                "high": s.high,
                "scores": s.scores,
            }
            for name, s in spread.criteria.items()
        ],
        "disputed": spread.disputed,
        "adjudicated": ranking.adjudicated.get(spread.item_id, {}),
        "final": ranking.adjudicated.get(spread.item_id, {}).get(ranking.criterion)
        if ranking.criterion
        else None,
        "state": state,
    }


def item_get(*, task: AnnotationTask, item_id: int) -> AnnotationItem:
    item = AnnotationItem.objects.filter(task=task, pk=item_id).first()
    if item is None:
        raise Http404("No such item in this task.")
    return item


def neighbours(
    *, task: AnnotationTask, item: AnnotationItem, ranking: Ranking | None = None, hide_resolved: bool = False
) -> dict[str, Any]:
    """Previous and next item ids: in item order, or through the disagreement ranking when entered from
    it (the current item stays in the walk even when it was just resolved and resolved ones are hidden)."""
    if ranking is None:
        order = list(
            AnnotationItem.objects.filter(task=task).order_by("position").values_list("pk", flat=True)
        )
    else:
        order = ranking.ids(hide_resolved=hide_resolved, keep=item.pk)
    if item.pk not in order:  # an item nobody disputes, opened from the ranking's link of another page
        return {"prev": None, "next": None, "index": None, "total": len(order)}
    at = order.index(item.pk)
    return {
        "prev": order[at - 1] if at > 0 else None,
        "next": order[at + 1] if at + 1 < len(order) else None,
        "index": at + 1,
        "total": len(order),
    }


def item_review(*, task: AnnotationTask, item: AnnotationItem) -> dict[str, Any]:
    """One item: each submitted annotator's score per criterion side by side, their spread, the machine
    scores, the adjudicated final score; plus who has not submitted and everyone's comments."""
    assignments = list(
        Assignment.objects.filter(item=item).select_related("annotator").order_by("annotator__username")
    )
    submitted = [a for a in assignments if a.status == AssignmentStatus.SUBMITTED]
    final = {a.criterion: a for a in Adjudication.objects.filter(item=item).select_related("decided_by")}
    rows = []
    for c in task.criteria:
        name = c["name"]
        scores = [a.scores.get(name) for a in submitted]
        given = [float(s) for s in scores if s is not None]
        found = spread_of(given, width=float(c["max_value"]) - float(c["min_value"]))
        machine = item.machine_scores.get(name) if isinstance(item.machine_scores.get(name), dict) else None
        rows.append({
            "criterion": c,
            "scores": scores,
            "mean": sum(given) / len(given) if given else None,
            "range": found.range if found else None,
            "std": found.std if found else None,
            "training_score": machine.get("score") if machine else None,
            "adjudication": final.get(name),
        })  # fmt: skip
    return {
        "annotators": [a.annotator.username for a in submitted],
        "comments": [(a.annotator.username, a.comment) for a in submitted if a.comment],
        "not_submitted": [
            (a.annotator.username, a.status) for a in assignments if a.status != AssignmentStatus.SUBMITTED
        ],
        "rows": rows,
        "machine": item_machine_scores(task=task, item_id=item.pk),
        "adjudicated": bool(final),
    }


def annotator_work(*, task: AnnotationTask, username: str) -> dict[str, Any]:
    """One annotator's submitted items with, per criterion, their score, the others' mean (and how many
    others) and the final score; plus per criterion how far they were from the others and the final."""
    mine = list(
        Assignment.objects.filter(item__task=task, annotator__username=username)
        .select_related("item")
        .defer("item__prompt", "item__completion", "item__machine_scores")
        .annotate(excerpt=Left("item__prompt", PROMPT_EXCERPT))
        .order_by("item__position")
    )
    if not mine:
        raise Http404("That person has no work in this task.")
    submitted = [a for a in mine if a.status == AssignmentStatus.SUBMITTED]
    item_ids = [a.item_id for a in submitted]
    others: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item_id, scores in (
        Assignment.objects.filter(item_id__in=item_ids, status=AssignmentStatus.SUBMITTED)
        .exclude(annotator__username=username)
        .values_list("item_id", "scores")
    ):
        others[item_id].append(scores)
    final = adjudicated_scores(task=task)
    names = [c["name"] for c in task.criteria]
    rows = [_work_row(a, names, others.get(a.item_id, []), final.get(a.item_id, {})) for a in submitted]
    return {
        "username": username,
        "counts": {s.value: sum(1 for a in mine if a.status == s) for s in AssignmentStatus},
        "rows": rows,
        "summary": [_summary(at, name, rows) for at, name in enumerate(names)],
    }


def _work_row(
    a: Assignment, names: Sequence[str], others: list[dict[str, Any]], final: dict[str, float]
) -> dict[str, Any]:
    cells = []
    for name in names:
        theirs = [float(s[name]) for s in others if s.get(name) is not None]
        cells.append({
            "criterion": name,
            "mine": a.scores.get(name),
            "others_mean": sum(theirs) / len(theirs) if theirs else None,
            "others": len(theirs),
            "final": final.get(name),
        })  # fmt: skip
    excerpt: str = getattr(a, "excerpt", "")  # annotated by annotator_work (the prompt itself is deferred)
    return {"item_id": a.item_id, "position": a.item.position, "prompt": excerpt, "cells": cells}


def _summary(at: int, name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean absolute difference from the others' mean and from the final score, over the items that have one
    (``at``: the criterion's place in each row's cells)."""
    cells = [r["cells"][at] for r in rows if r["cells"][at]["mine"] is not None]
    vs_others = [abs(c["mine"] - c["others_mean"]) for c in cells if c["others_mean"] is not None]
    vs_final = [abs(c["mine"] - c["final"]) for c in cells if c["final"] is not None]
    return {
        "criterion": name,
        "compared": len(vs_others),
        "mean_abs_diff": sum(vs_others) / len(vs_others) if vs_others else None,
        "with_final": len(vs_final),
        "mean_abs_diff_final": sum(vs_final) / len(vs_final) if vs_final else None,
    }
