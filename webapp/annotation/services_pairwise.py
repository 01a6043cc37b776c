"""Writes for pairwise preference tasks: create one (from a run's rollouts, an evaluation's samples or an
uploaded pairs file), save or submit a judgement, adjudicate an item.

The roles are those of rubric tasks (services.py): owners and admins create and adjudicate; an annotator
judges only their own assignments; a viewer gets 403 on every write; an outsider 404. An assignment moves
through the same states (pending -> draft -> submitted, skipped), with ``choice`` (left / right / tie /
both_bad) in place of scores and ``comment`` holding the optional reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from webapp.annotation.balance import assign_annotators
from webapp.annotation.models import (
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
    Choice,
    PairwiseAdjudication,
    SourceKind,
    TaskKind,
)
from webapp.annotation.pairing import (
    ChosenPair,
    PairCandidate,
    choose_pairs,
    pairing_rule_from_dict,
    side_order,
)
from webapp.annotation.pairs_file import PairRow, read_pairs
from webapp.annotation.permissions import MANAGE_ANNOTATION
from webapp.annotation.services import MAX_ANNOTATORS_PER_ITEM, MAX_NOTE_CHARS, _annotator_ids, _check_own
from webapp.benchmarks.models import EvalRun, EvalSample
from webapp.core.errors import ApplicationError, Conflict, InvalidInput
from webapp.experiments.models import Rollout, Run
from webapp.teams.models import Project
from webapp.teams.permissions import require_role
from webapp.teams.selectors import AnyUser

MAX_REASON_CHARS = 5000
CHOICES = [c.value for c in Choice]


def _check_k(annotators_per_item: int) -> None:
    if not 1 <= annotators_per_item <= MAX_ANNOTATORS_PER_ITEM:
        raise InvalidInput(
            f"annotators_per_item: use 1 to {MAX_ANNOTATORS_PER_ITEM}.",
            {"annotators_per_item": [f"Give a number from 1 to {MAX_ANNOTATORS_PER_ITEM}."]},
        )


@transaction.atomic
def pairwise_task_create(
    *,
    project: Project,
    actor: AnyUser,
    name: str,
    items: Sequence[dict[str, Any]],
    source_kind: str,
    sampling: dict[str, Any],
    seed: int,
    annotators_per_item: int = 2,
    annotators: Sequence[str] | None = None,
    instructions: str = "",
    run: Run | None = None,
) -> AnnotationTask:
    """A pairwise task over ``items`` (AnnotationItem fields: prompt, completion, completion_right, pair,
    truth, ...), each assigned to ``annotators_per_item`` people with balance.py."""
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    _check_k(annotators_per_item)
    if not items:
        raise ApplicationError(
            "No pair matches: the source has no two completions of one prompt (with the options given)."
        )
    people = _annotator_ids(project=project, usernames=annotators)
    task = AnnotationTask.objects.create(
        project=project, kind=TaskKind.PAIRWISE, rubric=None, name=name.strip()[:200] or "Pairwise preferences",
        instructions=instructions, source_kind=source_kind, run=run, criteria=[], sampling=sampling,
        annotators_per_item=annotators_per_item, created_by=actor if isinstance(actor, User) else None,
    )  # fmt: skip
    created = AnnotationItem.objects.bulk_create(
        AnnotationItem(task=task, position=i, **fields) for i, fields in enumerate(items)
    )
    plan = assign_annotators(
        item_ids=[item.pk for item in created], annotator_ids=people, k=annotators_per_item, seed=seed
    )
    Assignment.objects.bulk_create(
        Assignment(item_id=item_id, annotator_id=person)
        for item_id, chosen in plan.items()
        for person in chosen
    )
    return task


def _side(pk: int, reward: float | None, correct: bool | None, **origin: Any) -> dict[str, Any]:
    return {"id": pk, "reward": reward, "correct": correct, **origin}


def _rollout_item(pair: ChosenPair, rows: dict[int, Rollout]) -> dict[str, Any]:
    left, right = rows[pair.left], rows[pair.right]
    return {
        "source_kind": SourceKind.RUN, "source_run_id": left.run_id, "source_step": left.step,
        "source": {"prompt_id": left.prompt_id, "group": left.group},
        "prompt": left.prompt, "completion": left.completion, "completion_right": right.completion,
        "reference_answer": left.answer,
        "pair": {"swapped": pair.swapped,
                 "left": _side(left.pk, left.reward, left.correct, rollout=left.pk, sample_index=left.sample_index),
                 "right": _side(right.pk, right.reward, right.correct, rollout=right.pk, sample_index=right.sample_index)},
    }  # fmt: skip


def pairwise_task_create_from_run(
    *, run: Run, actor: AnyUser, pairing: dict[str, Any] | None = None, name: str = "",
    annotators_per_item: int = 2, annotators: Sequence[str] | None = None, instructions: str = "",
) -> AnnotationTask:  # fmt: skip
    """Pairs of completions of the same prompt from one step's group (the rule's step, else the last)."""
    project = run.experiment.project
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    rule = pairing_rule_from_dict(pairing or {})
    rollouts = Rollout.objects.filter(run=run)
    step = rule.step
    if step is None:
        step = rollouts.order_by("-step").values_list("step", flat=True).first()
    if step is None or not rollouts.filter(step=step).exists():
        message = (
            f"Run {run.pk} has no rollouts at step {step}."
            if step is not None
            else f"Run {run.pk} has no rollouts yet."
        )
        raise InvalidInput(message, {"pairing.step": [message]})
    candidates = [
        PairCandidate(id=pk, group=(s, g), reward=reward, correct=correct)
        for pk, s, g, reward, correct in rollouts.filter(step=step).values_list("pk", "step", "group", "reward", "correct")
    ]  # fmt: skip
    chosen = choose_pairs(candidates, rule)
    wanted = {pk for p in chosen for pk in (p.left, p.right)}
    rows = Rollout.objects.filter(pk__in=wanted).defer("token_data", "tokens").in_bulk()
    return pairwise_task_create(
        project=project, actor=actor, name=name or f"Run {run.pk}: pairwise preferences (step {step})",
        items=[_rollout_item(p, rows) for p in chosen], source_kind=SourceKind.RUN,
        sampling={**rule.as_dict(), "resolved_step": step}, seed=rule.seed,
        annotators_per_item=annotators_per_item, annotators=annotators, instructions=instructions, run=run,
    )  # fmt: skip


def _sample_item(pair: ChosenPair, rows: dict[int, EvalSample], eval_run: EvalRun) -> dict[str, Any]:
    left, right = rows[pair.left], rows[pair.right]
    problem = left.problem
    return {
        "source_kind": SourceKind.BENCHMARK, "source_run_id": eval_run.run_id, "source_step": eval_run.step,
        "source": {"eval_run": eval_run.pk, "benchmark": eval_run.benchmark.name, "model": eval_run.label,
                   "problem_id": problem.problem_id, "problem_index": problem.index},
        "prompt": problem.prompt, "completion": left.text, "completion_right": right.text,
        "reference_answer": problem.answer,
        "pair": {"swapped": pair.swapped,
                 "left": _side(left.pk, left.reward, left.correct, sample=left.pk, sample_index=left.index),
                 "right": _side(right.pk, right.reward, right.correct, sample=right.pk, sample_index=right.index)},
    }  # fmt: skip


def pairwise_task_create_from_eval(
    *, eval_run: EvalRun, actor: AnyUser, pairing: dict[str, Any] | None = None, name: str = "",
    annotators_per_item: int = 2, annotators: Sequence[str] | None = None, instructions: str = "",
) -> AnnotationTask:  # fmt: skip
    """Pairs of samples of the same benchmark problem (an evaluation has no steps: ``step`` must be empty)."""
    project = eval_run.benchmark.project
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    rule = pairing_rule_from_dict(pairing or {})
    if rule.step is not None:
        message = "An evaluation has no steps: leave step empty."
        raise InvalidInput(message, {"pairing.step": [message]})
    samples = EvalSample.objects.filter(problem__eval_run=eval_run)
    candidates = [
        PairCandidate(id=pk, group=problem_id, reward=reward, correct=correct)
        for pk, problem_id, reward, correct in samples.values_list("pk", "problem_id", "reward", "correct")
    ]
    chosen = choose_pairs(candidates, rule)
    wanted = {pk for p in chosen for pk in (p.left, p.right)}
    rows = samples.filter(pk__in=wanted).select_related("problem").defer("token_data", "tokens").in_bulk()
    return pairwise_task_create(
        project=project, actor=actor,
        name=name or f"{eval_run.benchmark.name} on {eval_run.label}: pairwise preferences",
        items=[_sample_item(p, rows, eval_run) for p in chosen], source_kind=SourceKind.BENCHMARK,
        sampling={**rule.as_dict(), "eval_run": eval_run.pk}, seed=rule.seed,
        annotators_per_item=annotators_per_item, annotators=annotators, instructions=instructions,
        run=eval_run.run,
    )  # fmt: skip


def _file_item(row: PairRow, swap: bool, index: int) -> dict[str, Any]:
    left, right = (row.second, row.first) if swap else (row.first, row.second)
    first_name = "chosen" if row.labelled else "completion_a"
    second_name = "rejected" if row.labelled else "completion_b"
    sides = (
        ({"field": second_name}, {"field": first_name})
        if swap
        else ({"field": first_name}, {"field": second_name})
    )
    return {
        "source_kind": SourceKind.UPLOAD, "source": {"row": index + 1, "where": row.line},
        "prompt": row.prompt, "completion": left, "completion_right": right, "reference_answer": row.answer,
        "pair": {"swapped": swap, "left": sides[0], "right": sides[1]},
        "truth": ("right" if swap else "left") if row.labelled else "",
    }  # fmt: skip


def pairwise_task_create_from_file(
    *, project: Project, actor: AnyUser, path: Path, fmt: str, filename: str, seed: int = 0, name: str = "",
    annotators_per_item: int = 2, annotators: Sequence[str] | None = None, instructions: str = "",
) -> AnnotationTask:  # fmt: skip
    """Every row of a pairs file as an item, sides drawn with ``seed``; a chosen/rejected file's label is
    kept (``truth``) for the agreement with people, never shown to them."""
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    if not 0 <= seed < 2**32:
        raise InvalidInput("seed: give a whole number from 0 to 4294967295.", {"seed": ["Out of range."]})
    rows = read_pairs(path, fmt, display_name=filename)
    swaps = side_order(seed, len(rows))
    labelled = sum(r.labelled for r in rows)
    return pairwise_task_create(
        project=project, actor=actor, name=name or f"Pairs from {filename}",
        items=[_file_item(row, swap, i) for i, (row, swap) in enumerate(zip(rows, swaps, strict=True))],
        source_kind=SourceKind.UPLOAD, seed=seed,
        sampling={"filename": filename[:200], "rows": len(rows), "labelled": labelled, "seed": seed},
        annotators_per_item=annotators_per_item, annotators=annotators, instructions=instructions,
    )  # fmt: skip


def _checked_choice(choice: str | None, *, field: str = "choice", allow_blank: bool) -> str:
    if (choice in (None, "")) and allow_blank:
        return ""
    if choice not in CHOICES:
        message = f"{field}: choose one of {', '.join(CHOICES)}."
        raise InvalidInput(message, {field: [message]})
    return str(choice)


def _checked_reason(reason: str | None) -> str | None:
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        message = f"Keep the reason under {MAX_REASON_CHARS} characters (it has {len(reason)})."
        raise InvalidInput(message, {"reason": [message]})
    return reason


def _pairwise_assignment(assignment: Assignment, actor: AnyUser) -> Assignment:
    _check_own(assignment=assignment, actor=actor)
    locked = Assignment.objects.select_for_update().select_related("item__task").get(pk=assignment.pk)
    if locked.item.task.kind != TaskKind.PAIRWISE:
        raise ApplicationError("This item is scored on a rubric: send scores, not a choice.")
    return locked


@transaction.atomic
def judgement_save_draft(
    *, assignment: Assignment, actor: AnyUser, choice: str | None = None, reason: str | None = None
) -> Assignment:
    """Autosave: the choice may still be empty; the assignment becomes a draft."""
    locked = _pairwise_assignment(assignment, actor)
    if locked.status == AssignmentStatus.SUBMITTED:
        raise Conflict("This item is already submitted; submit again to change its choice.")
    locked.choice = _checked_choice(choice, allow_blank=True)
    reason = _checked_reason(reason)
    if reason is not None:
        locked.comment = reason
    locked.status = AssignmentStatus.DRAFT
    locked.save(update_fields=["choice", "comment", "status", "updated_at"])
    return locked


@transaction.atomic
def judgement_submit(
    *, assignment: Assignment, actor: AnyUser, choice: str | None, reason: str | None = None
) -> Assignment:
    """A choice is required; a submitted judgement may be submitted again with another choice."""
    locked = _pairwise_assignment(assignment, actor)
    locked.choice = _checked_choice(choice, allow_blank=False)
    reason = _checked_reason(reason)
    if reason is not None:
        locked.comment = reason
    locked.status = AssignmentStatus.SUBMITTED
    locked.submitted_at = timezone.now()
    locked.save(update_fields=["choice", "comment", "status", "submitted_at", "updated_at"])
    return locked


@transaction.atomic
def pairwise_adjudication_set(
    *, item: AnnotationItem, actor: AnyUser, choice: str | None, note: str = ""
) -> PairwiseAdjudication | None:
    """Set (or change) a pairwise item's final choice; ``choice`` None removes it. Owners and admins only."""
    task = item.task
    require_role(project=task.project, user=actor, minimum=MANAGE_ANNOTATION)
    if task.kind != TaskKind.PAIRWISE:
        raise ApplicationError("This item is scored on a rubric: adjudicate a criterion's score instead.")
    if len(note) > MAX_NOTE_CHARS:
        message = f"Keep the note under {MAX_NOTE_CHARS} characters (it has {len(note)})."
        raise InvalidInput(message, {"note": [message]})
    if choice is None:
        PairwiseAdjudication.objects.filter(item=item).delete()
        return None
    clean = _checked_choice(choice, allow_blank=False)
    adjudication, _ = PairwiseAdjudication.objects.update_or_create(
        item=item,
        defaults={
            "choice": clean,
            "note": note.strip(),
            "decided_by": actor if isinstance(actor, User) else None,
        },
    )
    return adjudication
