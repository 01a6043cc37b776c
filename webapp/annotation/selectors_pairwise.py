"""Reads for pairwise preference tasks: judgements, final decisions, agreement, disagreements, exports,
and ``preference_pairs`` (the pairs a reward model trains on).

These trust their caller (the role is checked by selectors.task_get_for_manager / item_get_for_manager,
or by the job that calls ``preference_pairs``). The final decision of an item is its adjudication, else
the majority of the submitted choices; a tie in votes is unresolved (pairwise_agreement.final_decision).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import User

from webapp.annotation.models import (
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
    PairwiseAdjudication,
)
from webapp.annotation.pairwise_agreement import (
    disagreements,
    final_decision,
    label_agreement,
    pairwise_agreement,
)

PAGE_SIZE = 50


def submitted_choices(*, task: AnnotationTask) -> dict[int, dict[int, str]]:
    """item id -> annotator id -> choice, from submitted assignments only."""
    found: dict[int, dict[int, str]] = defaultdict(dict)
    rows = Assignment.objects.filter(item__task=task, status=AssignmentStatus.SUBMITTED).exclude(choice="")
    for item_id, annotator_id, choice in rows.values_list("item_id", "annotator_id", "choice"):
        found[item_id][annotator_id] = choice
    return dict(found)


def adjudications_by_item(*, task: AnnotationTask) -> dict[int, PairwiseAdjudication]:
    return {
        a.item_id: a
        for a in PairwiseAdjudication.objects.filter(item__task=task).select_related("decided_by")
    }


def final_decisions(*, task: AnnotationTask) -> dict[int, str | None]:
    """item id -> the final choice (None: unresolved), for every item of the task."""
    choices = submitted_choices(task=task)
    adjudicated = adjudications_by_item(task=task)
    return {
        item_id: final_decision(
            list(choices.get(item_id, {}).values()),
            adjudicated[item_id].choice if item_id in adjudicated else None,
        )
        for item_id in AnnotationItem.objects.filter(task=task).values_list("pk", flat=True)
    }


def preference_pairs(task: AnnotationTask) -> list[dict[str, str]]:
    """The task's preferences as TRL's RewardTrainer reads them: ``{"prompt", "chosen", "rejected"}`` for
    every item whose final decision is left or right, in item order. Ties, "both bad" and unresolved items
    are left out (``preference_summary`` counts them)."""
    final = final_decisions(task=task)
    pairs = []
    items = AnnotationItem.objects.filter(task=task).order_by("position")
    for item in items.only("pk", "prompt", "completion", "completion_right").iterator(chunk_size=500):
        decision = final.get(item.pk)
        if decision == "left":
            pairs.append(
                {"prompt": item.prompt, "chosen": item.completion, "rejected": item.completion_right}
            )
        elif decision == "right":
            pairs.append(
                {"prompt": item.prompt, "chosen": item.completion_right, "rejected": item.completion}
            )
    return pairs


def preference_summary(*, task: AnnotationTask) -> dict[str, int]:
    """How many items' final decisions are exported (left/right) and how many are left out, by why."""
    counts = Counter(final_decisions(task=task).values())
    return {
        "pairs": counts["left"] + counts["right"], "left": counts["left"], "right": counts["right"],
        "tie": counts["tie"], "both_bad": counts["both_bad"], "unresolved": counts[None],
    }  # fmt: skip


def _names(ids: set[int]) -> dict[int, str]:
    return dict(User.objects.filter(pk__in=ids).values_list("pk", "username"))


def pairwise_task_agreement(*, task: AnnotationTask) -> dict[str, Any]:
    """Share of agreeing pairs, mean Cohen's kappa (with every annotator pair), Krippendorff's alpha on
    three outcomes and on four, and the agreement of the final decisions with the file's labels."""
    choices = submitted_choices(task=task)
    result = pairwise_agreement(choices).as_dict()
    names = _names({a for by in choices.values() for a in by})
    result["kappa_pairs"] = [
        {"first": names.get(p["first"], "?"), "second": names.get(p["second"], "?"), "shared": p["shared"],
         "kappa": p["kappa"]}
        for p in result["kappa_pairs"]
    ]  # fmt: skip
    truth = dict(AnnotationItem.objects.filter(task=task).exclude(truth="").values_list("pk", "truth"))
    share, n = label_agreement(final_decisions(task=task), truth) if truth else (None, 0)
    result["file_label"] = {"labelled_items": len(truth), "agreement": share, "items": n}
    return result


def pairwise_disagreement_view(*, task: AnnotationTask, hide_resolved: bool, page: int) -> dict[str, Any]:
    """The items people disagree on, most disputed first, with who chose what and any adjudication."""
    choices = submitted_choices(task=task)
    items = {i.pk: i for i in AnnotationItem.objects.filter(task=task, pk__in=list(choices))}
    adjudicated = adjudications_by_item(task=task)
    ranked = disagreements(choices, positions={pk: item.position for pk, item in items.items()})
    total, resolved = len(ranked), sum(1 for d in ranked if d.item_id in adjudicated)
    if hide_resolved:
        ranked = [d for d in ranked if d.item_id not in adjudicated]
    names = _names({a for by in choices.values() for a in by})
    start = (page - 1) * PAGE_SIZE
    rows = []
    for d in ranked[start : start + PAGE_SIZE]:
        item, adj = items[d.item_id], adjudicated.get(d.item_id)
        rows.append({
            "item": item.pk, "position": item.position, "prompt": item.prompt, "left": item.completion,
            "right": item.completion_right, "votes": d.votes, "minority_share": d.minority_share,
            "judgements": sorted((names.get(a, "?"), c) for a, c in choices[d.item_id].items()),
            "final": final_decision(list(choices[d.item_id].values()), adj.choice if adj else None),
            "adjudication": None if adj is None else {
                "choice": adj.choice, "note": adj.note, "by": adj.decided_by.username if adj.decided_by else None,
                "at": adj.decided_at.isoformat()},
        })  # fmt: skip
    return {"total": total, "resolved": resolved, "page": page, "pages": max(1, -(-len(ranked) // PAGE_SIZE)),
            "items": rows}  # fmt: skip


EXPORT_FIELDS = [
    "task_id", "item_id", "position", "source_kind", "source_run_id", "source_step", "prompt", "left", "right",
    "reference_answer", "annotator", "status", "choice", "reason", "submitted_at", "final", "adjudicated",
    "adjudication_note",
]  # fmt: skip


def pairwise_export_records(*, task: AnnotationTask) -> Iterator[dict[str, Any]]:
    """One record per assignment (every status), with the item's two completions as shown, its final
    decision and any adjudication; ``pair`` says where each side came from."""
    final = final_decisions(task=task)
    adjudicated = adjudications_by_item(task=task)
    rows = (
        Assignment.objects.filter(item__task=task)
        .select_related("item", "annotator")
        .order_by("item__position", "annotator__username")
    )
    for a in rows.iterator(chunk_size=500):
        item, adj = a.item, adjudicated.get(a.item_id)
        yield {
            "task_id": task.pk, "item_id": item.pk, "position": item.position, "source_kind": item.source_kind,
            "source_run_id": item.source_run_id, "source_step": item.source_step, "prompt": item.prompt,
            "left": item.completion, "right": item.completion_right, "reference_answer": item.reference_answer,
            "annotator": a.annotator.username, "status": a.status, "choice": a.choice or None,
            "reason": a.comment, "submitted_at": a.submitted_at.isoformat() if a.submitted_at else None,
            "final": final.get(item.pk), "adjudicated": adj is not None,
            "adjudication_note": adj.note if adj else None, "pair": item.pair,
            "file_label": item.truth or None,
        }  # fmt: skip


def pairwise_export_csv_rows(*, task: AnnotationTask) -> tuple[list[str], Iterator[list[Any]]]:
    header = [*EXPORT_FIELDS, "file_label"]

    def rows() -> Iterator[list[Any]]:
        for record in pairwise_export_records(task=task):
            yield [record[f] for f in header]

    return header, rows()


def pairwise_item_review(*, item: AnnotationItem) -> dict[str, Any]:
    """One pair: the text as shown, every annotator's choice and reason, the final decision."""
    work = Assignment.objects.filter(item=item).select_related("annotator").order_by("annotator__username")
    adj = PairwiseAdjudication.objects.filter(item=item).select_related("decided_by").first()
    submitted = [a.choice for a in work if a.status == AssignmentStatus.SUBMITTED and a.choice]
    return {
        "item": item.pk, "position": item.position, "prompt": item.prompt, "left": item.completion,
        "right": item.completion_right, "reference_answer": item.reference_answer, "pair": item.pair,
        "judgements": [{"annotator": a.annotator.username, "status": a.status, "choice": a.choice or None,
                        "reason": a.comment} for a in work],
        "final": final_decision(submitted, adj.choice if adj else None),
        "adjudication": None if adj is None else {
            "choice": adj.choice, "note": adj.note, "by": adj.decided_by.username if adj.decided_by else None,
            "at": adj.decided_at.isoformat()},
    }  # fmt: skip
