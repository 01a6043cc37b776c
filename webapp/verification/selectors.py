"""Reads of verifier definitions, versions and test cases; every ``*_for_user`` getter answers 404 to outsiders."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import Http404

from trainer.errors import RLVRError
from trainer.verifiers import VERIFIERS
from trainer.verifiers.spec import params_schema
from webapp.core.queues import QueuePosition, queue_position
from webapp.experiments.models import Rollout, Run
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser
from webapp.verification.bench import verifier_names
from webapp.verification.models import (
    JobKind,
    VerificationJob,
    VerifierDefinition,
    VerifierTestCase,
    VerifierVersion,
    config_label,
)

# What a rescore reads of each rollout (bench.RescoreTally turns a changed one into a result row).
RESCORE_FIELDS = ("id", "step", "group", "sample_index", "prompt", "completion", "answer", "correct")
RECENT_JOBS = 20


def definitions_for_project(*, project: Project) -> QuerySet[VerifierDefinition]:
    """The project's definitions, each with its latest version's number, verifier and test status."""
    latest = VerifierVersion.objects.filter(definition=OuterRef("pk")).order_by("-number")
    return (
        VerifierDefinition.objects.filter(project=project)
        .annotate(
            latest_number=Subquery(latest.values("number")[:1]),
            latest_verifier=Subquery(latest.values("verifier")[:1]),
            latest_status=Subquery(latest.values("test_status")[:1]),
            case_count=Count("test_cases", distinct=True),
        )
        .order_by("name", "id")
    )


def definition_get_for_user(*, definition_id: int, user: AnyUser) -> VerifierDefinition:
    definition = VerifierDefinition.objects.select_related("project").filter(pk=definition_id).first()
    if definition is None:
        raise Http404("No such verifier.")
    require_role(project=definition.project, user=user, minimum=READ)
    return definition


def version_get_for_user(*, version_id: int, user: AnyUser) -> VerifierVersion:
    version = (
        VerifierVersion.objects.select_related("definition", "definition__project", "created_by")
        .filter(pk=version_id)
        .first()
    )
    if version is None:
        raise Http404("No such verifier version.")
    require_role(project=version.definition.project, user=user, minimum=READ)
    return version


def test_case_get_for_user(*, case_id: int, user: AnyUser) -> VerifierTestCase:
    case = (
        VerifierTestCase.objects.select_related("definition", "definition__project")
        .filter(pk=case_id)
        .first()
    )
    if case is None:
        raise Http404("No such test case.")
    require_role(project=case.definition.project, user=user, minimum=READ)
    return case


def versions_for_definition(*, definition: VerifierDefinition) -> QuerySet[VerifierVersion]:
    return (
        VerifierVersion.objects.filter(definition=definition)
        .select_related("created_by", "definition")
        .annotate(run_count=Count("runs"))
        .order_by("-number")
    )


def latest_version(*, definition: VerifierDefinition) -> VerifierVersion | None:
    return VerifierVersion.objects.filter(definition=definition).order_by("-number").first()


def versions_for_project(*, project: Project) -> QuerySet[VerifierVersion]:
    """Every version in the project (newest first within a definition): what the experiment form offers."""
    return (
        VerifierVersion.objects.filter(definition__project=project)
        .select_related("definition")
        .order_by("definition__name", "-number")
    )


def test_cases_for_definition(*, definition: VerifierDefinition) -> QuerySet[VerifierTestCase]:
    return VerifierTestCase.objects.filter(definition=definition).order_by("id")


def canonical_params(verifier: str, params: Any) -> dict[str, Any] | None:
    """Params validated and with every default filled in by the verifier's own schema; None if invalid."""
    try:
        cls = VERIFIERS.get(verifier)
        return dict(cls.Params.model_validate(params or {}).model_dump(mode="json"))
    except (RLVRError, ValueError, TypeError):
        return None


def versions_matching_config(*, project: Project, verifiers: list[dict[str, Any]]) -> list[VerifierVersion]:
    """The saved versions a config's ``verifiers`` entries score with (same registry name, same params).

    When several versions match an entry, the one whose definition's label equals the entry's ``label``
    wins (the experiment form's picker sets it), then the newest. Entries typed by hand match too, as long
    as their validated params equal a saved version's.
    """
    found: list[VerifierVersion] = []
    for entry in verifiers:
        params = canonical_params(str(entry.get("name", "")), entry.get("params"))
        if params is None:
            continue
        candidates = [
            v for v in versions_for_project(project=project).filter(verifier=entry.get("name")).order_by("-id")
            if v.params == params
        ]  # fmt: skip
        if not candidates:
            continue
        label = entry.get("label")
        labelled = [v for v in candidates if config_label(v.definition.name) == label]
        chosen = (labelled or candidates)[0]
        if chosen not in found:
            found.append(chosen)
    return found


def registry_schema() -> list[dict[str, Any]]:
    """Every verifier a definition may use (``bench.verifier_names``: not the model and endpoint reward sources,
    which the Reward models page defines) with its docstring summary, parameter JSON schema and defaults."""
    items = []
    for name in verifier_names():
        cls = VERIFIERS.get(name)
        doc = (cls.__doc__ or "").strip().splitlines()
        defaults = canonical_params(name, {})
        items.append(
            {"name": name, "summary": doc[0] if doc else "", "schema": params_schema(name), "defaults": defaults}
        )  # fmt: skip
    return items


def job_get_for_user(*, job_id: int, user: AnyUser) -> VerificationJob:
    job = (
        VerificationJob.objects.select_related("version", "version__definition", "version__definition__project",
                                               "created_by")
        .filter(pk=job_id)
        .first()
    )  # fmt: skip
    if job is None:
        raise Http404("No such verification job.")
    require_role(project=job.version.definition.project, user=user, minimum=READ)
    return job


def job_queue_position(*, job: VerificationJob) -> QueuePosition | None:
    """Where a queued job stands on the ``default`` queue (webapp/core/queues.py); None once it left it."""
    return queue_position(VerificationJob.objects.all(), row=job, queue="default")


def jobs_for_version(*, version: VerifierVersion, limit: int = RECENT_JOBS) -> QuerySet[VerificationJob]:
    """The version's newest jobs first (audits and rescores)."""
    return (
        VerificationJob.objects.filter(version=version).select_related("created_by").order_by("-id")[:limit]
    )


def latest_job(*, version: VerifierVersion, kind: JobKind) -> VerificationJob | None:
    """The newest job of ``kind``: the page shows it again (progress or result) when reopened."""
    return VerificationJob.objects.filter(version=version, kind=kind).order_by("-id").first()


def rescore_rollout_ids(*, run: Run, limit: int | None) -> list[int]:
    """Ids of the rollouts a rescore scores, in the order it lists changes: newest steps first."""
    ids = (
        Rollout.objects.filter(run=run)
        .order_by("-step", "group", "sample_index")
        .values_list("id", flat=True)
    )
    return list(ids if limit is None else ids[:limit])


def rollouts_for_rescore(*, ids: list[int]) -> list[dict[str, Any]]:
    """``RESCORE_FIELDS`` of the rollouts ``ids``, in the order of ``ids``."""
    by_id = {row["id"]: row for row in Rollout.objects.filter(pk__in=ids).values(*RESCORE_FIELDS)}
    return [by_id[i] for i in ids if i in by_id]


def run_rollout_count(*, run: Run) -> int:
    return Rollout.objects.filter(run=run).count()
