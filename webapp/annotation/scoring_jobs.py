"""Scoring a task's items with a saved verifier version or a rubric's rule criteria, on a worker.

Follows how a verification rescore runs (webapp/verification/job_services.py): the web request only
checks the scorer and stores a queued ``ScoringJob``; ``dispatch.py`` sends
``workers.tasks_annotation.run_scoring_job`` to the ``default`` queue after commit, and a worker runs
``scoring_job_execute``, which is the only place a verifier or a rule touches the items. The web
process never runs them: a verifier may execute code (the sandboxed ``code`` verifier) or spin, and a
worker is where that is contained. With RLVR_ENQUEUE off nothing is sent and the job stays queued.

LLM-judge criteria are not scored here: the judge is a model the training worker loads next to the
policy (trainer/rubrics/judge.py) and no job loads it on its own, so a rubric's judge criteria are listed
as skipped. Running a job again is safe: a re-delivered finished job is skipped, and one left running by
a dead worker starts over (its scores are replaced, not added to).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from trainer.errors import RLVRError
from trainer.rubrics.config import CriterionSpec
from trainer.rubrics.rules import Rule, build_rule, run_rule
from trainer.samples import Sample
from webapp.annotation.dispatch import enqueue_scoring_job
from webapp.annotation.models import (
    AnnotationItem,
    AnnotationTask,
    ItemScore,
    ScorerKind,
    ScoringJob,
    ScoringStatus,
)
from webapp.annotation.permissions import MANAGE_ANNOTATION
from webapp.core.dispatch import send_after_commit
from webapp.core.errors import ApplicationError, InvalidInput
from webapp.rubrics.models import Rubric
from webapp.rubrics.selectors import criterion_to_config
from webapp.teams.permissions import require_role
from webapp.teams.selectors import AnyUser
from webapp.verification import bench
from webapp.verification.models import VerifierVersion

logger = logging.getLogger(__name__)

CHUNK = 500  # items scored between two saves of ``done``
ERROR_CHARS = 20_000
DETAIL_CHARS = 2_000  # a score's detail record kept (the reason and error survive a cut)


def scoring_job_start(
    *,
    task: AnnotationTask,
    actor: AnyUser,
    verifier_version: VerifierVersion | None = None,
    rubric: Rubric | None = None,
) -> ScoringJob:
    """Queue a job that scores every item of ``task`` with one scorer (the one queued or running for the
    same scorer is returned instead of a duplicate)."""
    require_role(project=task.project, user=actor, minimum=MANAGE_ANNOTATION)
    if task.kind == "pairwise":
        raise ApplicationError(
            "Scoring jobs score the items of rubric tasks; a pairwise task has two completions per item."
        )
    if (verifier_version is None) == (rubric is None):
        message = "Give either verifier_version or rubric, not both or neither."
        raise InvalidInput(message, {"verifier_version": [message]})
    if verifier_version is not None:
        kind, label, scorer = ScorerKind.VERIFIER, *_verifier_scorer(task, verifier_version)
    else:
        assert rubric is not None
        kind, label, scorer = ScorerKind.RUBRIC, *_rubric_scorer(task, rubric)
    with transaction.atomic():
        same = ScoringJob.objects.select_for_update().filter(
            task=task, kind=kind, verifier_version=verifier_version, rubric=rubric,
            status__in=(ScoringStatus.QUEUED, ScoringStatus.RUNNING),
        )  # fmt: skip
        existing = same.order_by("-id").first()
        if existing is not None:
            return existing
        job = ScoringJob.objects.create(
            task=task, kind=kind, verifier_version=verifier_version, rubric=rubric, label=label, scorer=scorer,
            total=task.items.count(), created_by=actor if actor.is_authenticated else None,
        )  # fmt: skip
        _enqueue_after_commit(job.pk)
    return job


def _verifier_scorer(task: AnnotationTask, version: VerifierVersion) -> tuple[str, dict[str, Any]]:
    definition = version.definition
    if definition.project_id != task.project_id:
        message = "That verifier belongs to another project: pick one of this task's project."
        raise InvalidInput(message, {"verifier_version": [message]})
    label = f"Verifier {definition.name} v{version.number}"
    return label, {"verifier": version.verifier, "params": version.params, "version": version.pk}


def _rubric_scorer(task: AnnotationTask, rubric: Rubric) -> tuple[str, dict[str, Any]]:
    """The rubric's rule criteria as trainer config, validated by the trainer's own schema (which only
    compiles their patterns: nothing is scored in the web process)."""
    if rubric.project_id != task.project_id:
        message = "That rubric belongs to another project: pick one of this task's project."
        raise InvalidInput(message, {"rubric": [message]})
    criteria = list(rubric.criteria.order_by("position", "id"))
    rules = [criterion_to_config(c) for c in criteria if c.scorer == "rule"]
    judged = [c.name for c in criteria if c.scorer == "judge"]
    if not rules:
        message = (
            f"Rubric {rubric.name!r} has no rule criteria to score with here. Judge criteria need the judge "
            "model, which only a training run loads."
        )
        raise InvalidInput(message, {"rubric": [message]})
    for spec in rules:
        try:
            CriterionSpec.model_validate(spec)
        except ValidationError as err:
            message = (
                f"Criterion {spec['name']!r} of rubric {rubric.name!r} is invalid: {err.errors()[0]['msg']}"
            )
            raise InvalidInput(message, {"rubric": [message]}) from None
    return f"Rubric {rubric.name}", {"rubric": rubric.pk, "criteria": rules, "skipped_judge_criteria": judged}


def _enqueue_after_commit(job_id: int) -> None:
    def failed(err: Exception) -> None:
        scoring_job_fail(
            job_id=job_id,
            message=f"Could not send the job to a worker ({err}). Check that Redis is reachable at REDIS_URL "
            "and that a worker listens on the 'default' queue, then start it again.",
        )

    send_after_commit(lambda: enqueue_scoring_job(job_id), failed, f"annotation scoring job {job_id}")


def scoring_job_fail(*, job_id: int, message: str) -> None:
    ScoringJob.objects.filter(pk=job_id).update(
        status=ScoringStatus.FAILED, error=message[:ERROR_CHARS], finished_at=timezone.now()
    )


def scoring_job_execute(*, job_id: int) -> str:
    """Score the items chunk by chunk (the worker's task calls this); 'succeeded', 'failed' or 'skipped'
    (no such job, or a finished one delivered again)."""
    job = _mark_started(job_id=job_id)
    if job is None:
        return "skipped"
    try:
        score_chunk = _verifier_chunks(job) if job.kind == ScorerKind.VERIFIER else _rubric_chunks(job)
        items = AnnotationItem.objects.filter(task_id=job.task_id).order_by("position")
        ids = list(items.values_list("pk", flat=True))
        ScoringJob.objects.filter(pk=job.pk).update(total=len(ids))
        for start in range(0, len(ids), CHUNK):
            chunk = list(
                AnnotationItem.objects.filter(pk__in=ids[start : start + CHUNK]).order_by("position")
            )
            ItemScore.objects.bulk_create(score_chunk(chunk))
            ScoringJob.objects.filter(pk=job.pk).update(done=start + len(chunk))
    except Exception as err:
        scoring_job_fail(job_id=job.pk, message=_error_text(job, err))
        return "failed"
    ScoringJob.objects.filter(pk=job.pk).update(status=ScoringStatus.SUCCEEDED, finished_at=timezone.now())
    return "succeeded"


def _mark_started(*, job_id: int) -> ScoringJob | None:
    with transaction.atomic():
        job = ScoringJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.finished:
            return None
        ItemScore.objects.filter(job=job).delete()  # a restarted job scores from the first item again
        job.status, job.done, job.attempts = ScoringStatus.RUNNING, 0, job.attempts + 1
        job.save(update_fields=["status", "done", "attempts"])
    return job


# Scores one chunk of items into unsaved ItemScore rows; built once per job (one verifier, the rules).
ChunkScorer = Callable[[Sequence[AnnotationItem]], list[ItemScore]]


def _verifier_chunks(job: ScoringJob) -> ChunkScorer:
    verifier = bench.built(job.scorer["verifier"], job.scorer["params"])

    def score(items: Sequence[AnnotationItem]) -> list[ItemScore]:
        verdicts = bench.score_with(verifier, [(i.completion, i.reference_answer) for i in items])
        rows = []
        for item, v in zip(items, verdicts, strict=True):
            detail = {"correct": v.correct, "reason": v.reason, "extracted": v.extracted, "error": v.error}
            score = None if v.error is not None else v.reward
            rows.append(ItemScore(job=job, item=item, key="reward", score=score, detail=_safe_detail(detail)))
        return rows

    return score


def _rubric_chunks(job: ScoringJob) -> ChunkScorer:
    specs = [CriterionSpec.model_validate(c) for c in job.scorer["criteria"]]
    rules: dict[str, Rule] = {}
    for spec in specs:
        assert spec.rule is not None  # the start kept only rule criteria, validated
        rules[spec.name] = build_rule(spec.rule.type, spec.rule.params)

    def score(items: Sequence[AnnotationItem]) -> list[ItemScore]:
        completions = [i.completion for i in items]
        samples = [Sample(f"annotation-item-{i.pk}", i.prompt, i.reference_answer) for i in items]
        rows = []
        for spec in specs:
            low, high = spec.bounds
            for item, outcome in zip(items, run_rule(rules[spec.name], completions, samples), strict=True):
                scored = None if "error" in outcome.detail else low + outcome.fraction * (high - low)
                rows.append(
                    ItemScore(
                        job=job, item=item, key=spec.name, score=scored, detail=_safe_detail(outcome.detail)
                    )
                )
        return rows

    return score


def _safe_detail(detail: dict[str, Any]) -> dict[str, Any]:
    """The detail as plain JSON, cut to its reason and error when it is long."""
    text = json.dumps(detail, default=str, ensure_ascii=False)
    if len(text) <= DETAIL_CHARS:
        return dict(json.loads(text))
    return {k: str(detail[k])[:500] for k in ("reason", "error", "correct") if detail.get(k) is not None}


def _error_text(job: ScoringJob, err: Exception) -> str:
    if isinstance(err, ApplicationError):
        return err.message
    if isinstance(err, RLVRError):
        return str(err)
    logger.exception("annotation scoring job %s failed", job.pk)
    return f"{type(err).__name__}: {err}"
