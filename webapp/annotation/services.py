"""Writes for team annotation: create a task (sample items, assign annotators), save/submit/skip work.

Owners and admins create tasks; an annotator (or higher) edits only their own assignments; a viewer gets
403 on every write; an outsider 404. State transitions of an assignment:

    pending -> draft (save) -> submitted (submit)        pending/draft -> skipped (skip)
    skipped -> draft (save) / submitted (submit)         submitted -> submitted (resubmit changed scores)

A submitted assignment is not turned back into a draft by a save (that would silently drop it from the
agreement figures): changing it means submitting again.

Owners and admins also adjudicate: set an item's final score on a criterion (``adjudication_set``), kept
next to the annotators' scores, never in place of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from webapp.annotation.balance import assign_annotators
from webapp.annotation.models import (
    Adjudication,
    AnnotationItem,
    AnnotationTask,
    Assignment,
    AssignmentStatus,
    SourceKind,
)
from webapp.annotation.permissions import MANAGE_ANNOTATION
from webapp.annotation.sampling import Candidate, sample_candidates, sampling_rule_from_dict
from webapp.annotation.scores import criterion_snapshot, validated_scores
from webapp.annotation.snapshots import ItemSnapshot, machine_scores
from webapp.benchmarks.models import EvalRun, EvalSample
from webapp.core.errors import ApplicationError, Conflict, InvalidInput
from webapp.experiments.models import Rollout, Run
from webapp.rubrics.models import Rubric
from webapp.teams.models import ROLE_RANK, Membership, Project, Role
from webapp.teams.permissions import ANNOTATE, require_role
from webapp.teams.selectors import AnyUser

MAX_ANNOTATORS_PER_ITEM = 10
MAX_NOTE_CHARS = 2000  # an adjudication's note


def _annotator_ids(*, project: Project, usernames: Sequence[str] | None) -> list[int]:
    """Members with the annotator role or higher; only those named in ``usernames`` when given."""
    members = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    eligible = {m.user.username: m.user_id for m in members if ROLE_RANK[m.role] >= ROLE_RANK[Role.ANNOTATOR]}
    if usernames is None:
        return list(eligible.values())
    unknown = [name for name in usernames if name not in eligible]
    if unknown:
        raise InvalidInput(
            f"annotators: {', '.join(unknown)} cannot annotate in this project.",
            {
                "annotators": [
                    f"{name!r} is not a member with the annotator role or higher." for name in unknown
                ]
            },
        )
    return [eligible[name] for name in dict.fromkeys(usernames)]


def _check_task_fields(*, rubric: Rubric, project: Project, annotators_per_item: int) -> list[dict[str, Any]]:
    if rubric.project_id != project.pk:
        raise InvalidInput(
            "rubric: that rubric belongs to another project.", {"rubric": ["Pick a rubric of this project."]}
        )
    criteria = [criterion_snapshot(c) for c in rubric.criteria.order_by("position", "id")]
    if not criteria:
        raise InvalidInput(
            "rubric: the rubric has no criteria.", {"rubric": ["Add a criterion to the rubric first."]}
        )
    if not 1 <= annotators_per_item <= MAX_ANNOTATORS_PER_ITEM:
        raise InvalidInput(
            f"annotators_per_item: use 1 to {MAX_ANNOTATORS_PER_ITEM}.",
            {"annotators_per_item": [f"Give a number from 1 to {MAX_ANNOTATORS_PER_ITEM}."]},
        )
    return criteria


@transaction.atomic
def task_create(
    *,
    project: Project,
    rubric: Rubric,
    actor: AnyUser,
    name: str,
    snapshots: Sequence[ItemSnapshot],
    annotators_per_item: int = 2,
    annotators: Sequence[str] | None = None,
    instructions: str = "",
    sampling: dict[str, Any] | None = None,
    source_kind: str = SourceKind.RUN,
    run: Run | None = None,
    seed: int = 0,
) -> AnnotationTask:
    """A task over the given item snapshots (any source), each assigned to ``annotators_per_item`` people."""
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    criteria = _check_task_fields(rubric=rubric, project=project, annotators_per_item=annotators_per_item)
    if not snapshots:
        raise ApplicationError(
            "No item matches the sampling rule; loosen it (e.g. turn off 'only incorrect')."
        )
    people = _annotator_ids(project=project, usernames=annotators)
    task = AnnotationTask.objects.create(
        project=project,
        rubric=rubric,
        name=name.strip() or f"Annotate with {rubric.name}",
        instructions=instructions,
        source_kind=source_kind,
        run=run,
        criteria=criteria,
        sampling=sampling or {},
        annotators_per_item=annotators_per_item,
        created_by=actor if isinstance(actor, User) else None,
    )
    items = AnnotationItem.objects.bulk_create(
        AnnotationItem(task=task, position=i, **_item_fields(snap)) for i, snap in enumerate(snapshots)
    )
    plan = assign_annotators(
        item_ids=[item.pk for item in items], annotator_ids=people, k=annotators_per_item, seed=seed
    )
    Assignment.objects.bulk_create(
        Assignment(item_id=item_id, annotator_id=person)
        for item_id, chosen in plan.items()
        for person in chosen
    )
    return task


def _item_fields(snap: ItemSnapshot) -> dict[str, Any]:
    return {
        "source_kind": snap.source_kind,
        "rollout_id": snap.source_rollout_id if snap.source_kind == SourceKind.RUN else None,
        "source_run_id": snap.source_run_id,
        "source_step": snap.source_step,
        "source_rollout_id": snap.source_rollout_id,
        "source": snap.source,
        "prompt": snap.prompt,
        "completion": snap.completion,
        "reference_answer": snap.reference_answer,
        "reward": snap.reward,
        "correct": snap.correct,
        "machine_scores": snap.machine_scores,
    }


def rollout_snapshot(rollout: Rollout, *, criteria: Sequence[dict[str, Any]]) -> ItemSnapshot:
    return ItemSnapshot(
        prompt=rollout.prompt,
        completion=rollout.completion,
        reference_answer=rollout.answer,
        reward=rollout.reward,
        correct=rollout.correct,
        source_kind=SourceKind.RUN,
        source_run_id=rollout.run_id,
        source_step=rollout.step,
        source_rollout_id=rollout.pk,
        source={"prompt_id": rollout.prompt_id, "group": rollout.group, "sample_index": rollout.sample_index},
        machine_scores=machine_scores(rewards=rollout.rewards, details=rollout.details, criteria=criteria),
    )


def task_create_from_run(
    *,
    run: Run,
    rubric: Rubric,
    actor: AnyUser,
    name: str = "",
    sampling: dict[str, Any] | None = None,
    annotators_per_item: int = 2,
    annotators: Sequence[str] | None = None,
    instructions: str = "",
) -> AnnotationTask:
    """Sample a run's rollouts with the rule, snapshot each, and create the task."""
    project = run.experiment.project
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    rule = sampling_rule_from_dict(sampling or {})
    criteria = _check_task_fields(rubric=rubric, project=project, annotators_per_item=annotators_per_item)
    candidates = [
        Candidate(id=pk, step=step, reward=reward, correct=correct)
        for pk, step, reward, correct in Rollout.objects.filter(run=run).values_list(
            "pk", "step", "reward", "correct"
        )
    ]
    chosen = sample_candidates(candidates, rule)
    rollouts = Rollout.objects.filter(pk__in=chosen).defer("token_data", "tokens").in_bulk()
    snapshots = [rollout_snapshot(rollouts[pk], criteria=criteria) for pk in chosen]
    return task_create(
        project=project,
        rubric=rubric,
        actor=actor,
        name=name or f"Run {run.pk}: {rubric.name}",
        snapshots=snapshots,
        annotators_per_item=annotators_per_item,
        annotators=annotators,
        instructions=instructions,
        sampling=rule.as_dict(),
        source_kind=SourceKind.RUN,
        run=run,
        seed=rule.seed,
    )


def eval_sample_snapshot(sample: EvalSample, eval_run: EvalRun) -> ItemSnapshot:
    """A benchmark sample as an item: the problem's prompt and reference, the sampled text, its verdict."""
    problem = sample.problem
    return ItemSnapshot(
        prompt=problem.prompt,
        completion=sample.text,
        reference_answer=problem.answer,
        reward=sample.reward,
        correct=sample.correct,
        source_kind=SourceKind.BENCHMARK,
        source_run_id=eval_run.run_id,
        source_step=eval_run.step,
        source={
            "eval_run": eval_run.pk, "benchmark": eval_run.benchmark.name, "model": eval_run.label,
            "problem_id": problem.problem_id, "problem_index": problem.index, "seed": problem.seed,
            "sample_index": sample.index, "sample": sample.pk,
        },
    )  # fmt: skip


def task_create_from_eval(
    *,
    eval_run: EvalRun,
    rubric: Rubric,
    actor: AnyUser,
    name: str = "",
    sampling: dict[str, Any] | None = None,
    annotators_per_item: int = 2,
    annotators: Sequence[str] | None = None,
    instructions: str = "",
) -> AnnotationTask:
    """Sample an evaluation's stored samples with the rule (steps do not apply: every sample counts as the
    evaluated checkpoint's step), snapshot each, and create the task."""
    project = eval_run.benchmark.project
    require_role(project=project, user=actor, minimum=MANAGE_ANNOTATION)
    rule = sampling_rule_from_dict(sampling or {})
    samples = EvalSample.objects.filter(problem__eval_run=eval_run)
    candidates = [
        Candidate(id=pk, step=0, reward=reward, correct=correct)
        for pk, reward, correct in samples.values_list("pk", "reward", "correct")
    ]
    chosen = sample_candidates(candidates, rule)
    rows = samples.filter(pk__in=chosen).select_related("problem").defer("token_data", "tokens").in_bulk()
    return task_create(
        project=project,
        rubric=rubric,
        actor=actor,
        name=name or f"{eval_run.benchmark.name} on {eval_run.label}: {rubric.name}",
        snapshots=[eval_sample_snapshot(rows[pk], eval_run) for pk in chosen],
        annotators_per_item=annotators_per_item,
        annotators=annotators,
        instructions=instructions,
        sampling={**rule.as_dict(), "eval_run": eval_run.pk},
        source_kind=SourceKind.BENCHMARK,
        run=eval_run.run,
        seed=rule.seed,
    )


UNFINISHED = (AssignmentStatus.PENDING, AssignmentStatus.DRAFT, AssignmentStatus.SKIPPED)


@transaction.atomic
def task_reassign_unfinished(
    *, task: AnnotationTask, actor: AnyUser, from_username: str, to_username: str
) -> dict[str, int]:
    """Move ``from_username``'s unfinished work (pending, draft, skipped) in ``task`` to ``to_username``:
    when someone leaves the team or is overloaded. Submitted scores stay with who gave them; a moved draft
    starts over empty (its partial scores were someone else's judgement); an item the new annotator already
    has stays where it is (one assignment per person and item). Returns ``{"moved": n, "kept": k}``."""
    require_role(project=task.project, user=actor, minimum=MANAGE_ANNOTATION)
    if from_username == to_username:
        raise InvalidInput(
            "Pick two different people.", {"to": ["Pick someone other than the person whose work moves."]}
        )
    (to_id,) = _annotator_ids(project=task.project, usernames=[to_username])
    unfinished = list(
        Assignment.objects.select_for_update()
        .filter(item__task=task, annotator__username=from_username, status__in=UNFINISHED)
        .values_list("pk", "item_id")
    )
    if not unfinished:
        message = f"{from_username!r} has no unfinished work in this task."
        raise InvalidInput(message, {"from": [message]})
    taken = set(
        Assignment.objects.filter(item__task=task, annotator_id=to_id).values_list("item_id", flat=True)
    )
    movable = [pk for pk, item_id in unfinished if item_id not in taken]
    Assignment.objects.filter(pk__in=movable).update(
        annotator_id=to_id,
        status=AssignmentStatus.PENDING,
        scores={},
        choice="",
        comment="",
        submitted_at=None,
        updated_at=timezone.now(),
    )
    return {"moved": len(movable), "kept": len(unfinished) - len(movable)}


def _check_own(*, assignment: Assignment, actor: AnyUser) -> None:
    require_role(project=assignment.item.task.project, user=actor, minimum=ANNOTATE)
    if assignment.annotator_id != getattr(actor, "pk", None):
        raise Http404("No such assignment.")  # someone else's work is not visible, let alone editable


@transaction.atomic
def assignment_save_draft(
    *, assignment: Assignment, actor: AnyUser, scores: dict[str, Any], comment: str | None = None
) -> Assignment:
    """Autosave: partial scores are fine; the assignment becomes a draft."""
    _check_own(assignment=assignment, actor=actor)
    assignment = Assignment.objects.select_for_update().select_related("item__task").get(pk=assignment.pk)
    if assignment.status == AssignmentStatus.SUBMITTED:
        raise Conflict("This item is already submitted; submit again (s) to change its scores.")
    assignment.scores = validated_scores(scores, criteria=assignment.item.task.criteria, complete=False)
    if comment is not None:
        assignment.comment = comment
    assignment.status = AssignmentStatus.DRAFT
    assignment.save(update_fields=["scores", "comment", "status", "updated_at"])
    return assignment


@transaction.atomic
def assignment_submit(
    *, assignment: Assignment, actor: AnyUser, scores: dict[str, Any], comment: str | None = None
) -> Assignment:
    """Every criterion must be scored; a submitted assignment may be submitted again with new scores."""
    _check_own(assignment=assignment, actor=actor)
    assignment = Assignment.objects.select_for_update().select_related("item__task").get(pk=assignment.pk)
    assignment.scores = validated_scores(scores, criteria=assignment.item.task.criteria, complete=True)
    if comment is not None:
        assignment.comment = comment
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.submitted_at = timezone.now()
    assignment.save(update_fields=["scores", "comment", "status", "submitted_at", "updated_at"])
    return assignment


@transaction.atomic
def assignment_skip(*, assignment: Assignment, actor: AnyUser) -> Assignment:
    """Leave the item unscored (kept scores stay, so un-skipping loses nothing)."""
    _check_own(assignment=assignment, actor=actor)
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.status == AssignmentStatus.SUBMITTED:
        raise Conflict("A submitted item cannot be skipped; its scores count towards agreement.")
    assignment.status = AssignmentStatus.SKIPPED
    assignment.save(update_fields=["status", "updated_at"])
    return assignment


@transaction.atomic
def adjudication_set(
    *, item: AnnotationItem, actor: AnyUser, criterion: str, score: float | None, note: str = ""
) -> Adjudication | None:
    """Set (or change) the final score of ``item`` on ``criterion``; ``score`` None removes it. The score
    is checked against the criterion's scale like an annotator's; owners and admins only."""
    task = item.task
    require_role(project=task.project, user=actor, minimum=MANAGE_ANNOTATION)
    names = [c["name"] for c in task.criteria]
    if criterion not in names:
        message = f"No criterion {criterion!r} in this task; its criteria are {', '.join(names)}."
        raise InvalidInput(message, {"criterion": [message]})
    if len(note) > MAX_NOTE_CHARS:
        message = f"Keep the note under {MAX_NOTE_CHARS} characters (it has {len(note)})."
        raise InvalidInput(message, {"note": [message]})
    if score is None:
        Adjudication.objects.filter(item=item, criterion=criterion).delete()
        return None
    try:
        clean = validated_scores({criterion: score}, criteria=task.criteria, complete=False)
    except InvalidInput as err:  # the annotator's field path, scores.<name>, is "score" here
        raise InvalidInput(err.message.replace(f"scores.{criterion}", "score", 1),
                           {"score": err.fields[f"scores.{criterion}"]}) from None  # fmt: skip
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item, criterion=criterion,
        defaults={"score": clean[criterion], "note": note.strip(), "decided_by": actor if isinstance(actor, User) else None},
    )  # fmt: skip
    return adjudication
