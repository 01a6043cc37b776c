"""Verifier definitions over HTTP: CRUD, versions, test cases, the test bench, and audit and rescore jobs.

The bench answers at once; an audit or a rescore answers 202 with a job (webapp/verification/job_services.py)
that a worker runs and the client polls at ``verification-jobs/<id>/``. Views stay thin: they parse input
with a serializer, call a selector/service/bench function, and answer. Errors take the API's one shape
(webapp/api/exception_handler.py); outsiders get 404.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.fields import StrictJSONField
from webapp.experiments.selectors import run_get_for_user
from webapp.teams.selectors import project_get_for_user
from webapp.verification import bench
from webapp.verification.job_services import (
    RESCORE_CAP,
    verification_audit_start,
    verification_job_cancel,
    verification_rescore_start,
)
from webapp.verification.models import (
    JobStatus,
    VerificationJob,
    VerifierDefinition,
    VerifierTestCase,
    VerifierVersion,
)
from webapp.verification.selectors import (
    definition_get_for_user,
    definitions_for_project,
    job_get_for_user,
    job_queue_position,
    jobs_for_version,
    registry_schema,
    test_case_get_for_user,
    test_cases_for_definition,
    version_get_for_user,
    versions_for_definition,
    versions_for_project,
)
from webapp.verification.services import (
    verifier_definition_create,
    verifier_definition_delete,
    verifier_definition_update,
    verifier_test_case_create,
    verifier_test_case_delete,
    verifier_version_create,
)


class VersionOut(serializers.ModelSerializer[VerifierVersion]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    definition_name = serializers.CharField(source="definition.name", read_only=True)
    config_entry = serializers.JSONField(read_only=True, help_text="The experiment config's verifiers entry.")

    class Meta:
        model = VerifierVersion
        fields = (
            "id", "definition", "definition_name", "number", "verifier", "params", "note", "created_by",
            "created_at", "test_status", "test_results", "config_entry",
        )  # fmt: skip


class CaseOut(serializers.ModelSerializer[VerifierTestCase]):
    class Meta:
        model = VerifierTestCase
        fields = ("id", "name", "completion", "reference", "expected_correct", "created_at")


class DefinitionOut(serializers.ModelSerializer[VerifierDefinition]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = VerifierDefinition
        fields = ("id", "project", "name", "description", "created_by", "created_at", "updated_at")


class DefinitionIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=120, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    verifier = serializers.CharField(
        max_length=64,
        help_text="A trainer verifier registry name, one of verifier-registry/ (judges and reward models are "
        "reward models of the project, not verifiers).",
    )
    params = StrictJSONField(required=False, default=dict, help_text="The verifier's parameters.")


class DefinitionPatchIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=120, required=False)
    description = serializers.CharField(required=False, allow_blank=True)


class VersionIn(serializers.Serializer[None]):
    verifier = serializers.CharField(max_length=64)
    params = StrictJSONField(required=False, default=dict)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=300)


class CaseIn(serializers.Serializer[None]):
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    completion = serializers.CharField(trim_whitespace=False, max_length=100_000)
    reference = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, default=None, trim_whitespace=False
    )
    expected_correct = serializers.BooleanField(help_text="true: must be accepted; false: must be rejected.")


class BenchIn(serializers.Serializer[None]):
    completion = serializers.CharField(trim_whitespace=False, allow_blank=True, max_length=100_000)
    reference = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, default=None, trim_whitespace=False
    )


class RescoreIn(serializers.Serializer[None]):
    run = serializers.IntegerField(help_text="Id of a run of the same project.")
    limit = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text=f"Score only the newest this many rollouts (at most {RESCORE_CAP}); null or absent: all of them.",
    )  # fmt: skip


class JobOut(serializers.ModelSerializer[VerificationJob]):
    # A string, not an enum, in the schema: drf-spectacular names enums after the field, and a second
    # ``status`` enum (runs' and evaluations' also have ``cancelled``) fails the schema check with a warning.
    status = serializers.CharField(read_only=True, help_text=f"One of {', '.join(JobStatus.values)}.")
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    progress = serializers.SerializerMethodField(
        help_text="done / total, 0 to 1; null while the total is unknown."
    )
    url = serializers.SerializerMethodField(help_text="Where to poll this job.")
    can_cancel = serializers.BooleanField(
        source="cancellable", read_only=True, help_text="Queued or running and not already asked to stop."
    )
    ahead_in_queue = serializers.SerializerMethodField(
        help_text="While queued: jobs a 'default' worker runs before this one (running ones included); else null."
    )

    class Meta:
        model = VerificationJob
        fields: tuple[str, ...] = (
            "id", "kind", "version", "run", "limit", "status", "cancel_requested", "can_cancel", "done", "total",
            "progress", "ahead_in_queue", "error", "attempts", "created_by", "created_at", "started_at",
            "finished_at", "url",
        )  # fmt: skip

    def get_ahead_in_queue(self, job: VerificationJob) -> int | None:
        position = job_queue_position(job=job)
        return None if position is None else position.ahead

    def get_progress(self, job: VerificationJob) -> float | None:
        return min(1.0, job.done / job.total) if job.total else None

    def get_url(self, job: VerificationJob) -> str:
        return reverse("verification-job-detail", kwargs={"job_id": job.pk})


class JobDetailOut(JobOut):
    result = StrictJSONField(
        read_only=True,
        help_text="Once succeeded: the audit report {total, accepted, errors, rate, rows} or the rescore summary "
        "{run, scored, total, changed, newly_correct, newly_incorrect, errors, rows, rows_truncated}; else {}.",
    )

    class Meta(JobOut.Meta):
        fields = (*JobOut.Meta.fields, "result")


def _valid(serializer_class: type[serializers.Serializer[None]], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _job_json(job: VerificationJob, request: Request) -> dict[str, Any]:
    return dict(JobDetailOut(job, context={"request": request}).data)


def _definition_json(definition: VerifierDefinition) -> dict[str, Any]:
    return {
        **DefinitionOut(definition).data,
        "versions": VersionOut(versions_for_definition(definition=definition), many=True).data,
        "test_cases": CaseOut(test_cases_for_definition(definition=definition), many=True).data,
    }


class VerifierRegistryApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Registered verifiers with their parameter schemas")
    def get(self, request: Request) -> Response:
        return Response(registry_schema())


class DefinitionListApi(APIView):
    @extend_schema(responses=DefinitionOut(many=True), summary="Verifier definitions of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(DefinitionOut(definitions_for_project(project=project), many=True).data)

    @extend_schema(
        request=DefinitionIn, responses={201: OpenApiTypes.OBJECT}, summary="Define a verifier (version 1)"
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = _valid(DefinitionIn, request.data)
        definition = verifier_definition_create(project=project, actor=request.user, **data)
        return Response(_definition_json(definition), status=status.HTTP_201_CREATED)


class ProjectVersionListApi(APIView):
    @extend_schema(responses=VersionOut(many=True), summary="Every saved verifier version of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(VersionOut(versions_for_project(project=project), many=True).data)


class DefinitionDetailApi(APIView):
    @extend_schema(
        responses=OpenApiTypes.OBJECT, summary="A verifier definition with its versions and test cases"
    )
    def get(self, request: Request, definition_id: int) -> Response:
        return Response(
            _definition_json(definition_get_for_user(definition_id=definition_id, user=request.user))
        )

    @extend_schema(
        request=DefinitionPatchIn, responses=OpenApiTypes.OBJECT, summary="Rename or re-describe a verifier"
    )
    def patch(self, request: Request, definition_id: int) -> Response:
        definition = definition_get_for_user(definition_id=definition_id, user=request.user)
        data = _valid(DefinitionPatchIn, request.data)
        definition = verifier_definition_update(definition=definition, actor=request.user, **data)
        return Response(_definition_json(definition))

    @extend_schema(responses={204: None}, summary="Delete a verifier no run has used")
    def delete(self, request: Request, definition_id: int) -> Response:
        definition = definition_get_for_user(definition_id=definition_id, user=request.user)
        verifier_definition_delete(definition=definition, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class VersionListApi(APIView):
    @extend_schema(
        request=VersionIn, responses={201: VersionOut}, summary="Edit a verifier: save a new version"
    )
    def post(self, request: Request, definition_id: int) -> Response:
        definition = definition_get_for_user(definition_id=definition_id, user=request.user)
        version = verifier_version_create(
            definition=definition, actor=request.user, **_valid(VersionIn, request.data)
        )
        return Response(VersionOut(version).data, status=status.HTTP_201_CREATED)


class VersionDetailApi(APIView):
    @extend_schema(responses=VersionOut, summary="One verifier version")
    def get(self, request: Request, version_id: int) -> Response:
        return Response(VersionOut(version_get_for_user(version_id=version_id, user=request.user)).data)


class CaseListApi(APIView):
    @extend_schema(responses=CaseOut(many=True), summary="Saved test cases of a verifier")
    def get(self, request: Request, definition_id: int) -> Response:
        definition = definition_get_for_user(definition_id=definition_id, user=request.user)
        return Response(CaseOut(test_cases_for_definition(definition=definition), many=True).data)

    @extend_schema(
        request=CaseIn, responses={201: CaseOut}, summary="Save a test case (re-checks the latest version)"
    )
    def post(self, request: Request, definition_id: int) -> Response:
        definition = definition_get_for_user(definition_id=definition_id, user=request.user)
        case = verifier_test_case_create(
            definition=definition, actor=request.user, **_valid(CaseIn, request.data)
        )
        return Response(CaseOut(case).data, status=status.HTTP_201_CREATED)


class CaseDetailApi(APIView):
    @extend_schema(responses={204: None}, summary="Delete a test case")
    def delete(self, request: Request, case_id: int) -> Response:
        case = test_case_get_for_user(case_id=case_id, user=request.user)
        verifier_test_case_delete(case=case, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class BenchApi(APIView):
    @extend_schema(
        request=BenchIn, responses=OpenApiTypes.OBJECT,
        summary="Test bench: the verdict, extracted answer and reason for one input (scored out of the web "
        "process; past its budget, 5 s by default, the verdict is a timeout error)",
    )  # fmt: skip
    def post(self, request: Request, version_id: int) -> Response:
        version = version_get_for_user(version_id=version_id, user=request.user)
        data = _valid(BenchIn, request.data)
        (verdict,) = bench.score(version, [(data["completion"], data["reference"])])
        return Response(verdict.to_json())


class AuditApi(APIView):
    @extend_schema(
        request=None, responses={202: JobDetailOut},
        summary="Start the metamorphic audit (acceptance rate per answer form) as a background job",
    )  # fmt: skip
    def post(self, request: Request, version_id: int) -> Response:
        version = version_get_for_user(version_id=version_id, user=request.user)
        job = verification_audit_start(version=version, actor=request.user)
        return Response(_job_json(job, request), status=status.HTTP_202_ACCEPTED)


class RescoreApi(APIView):
    @extend_schema(
        request=RescoreIn, responses={202: JobDetailOut},
        summary="Start re-scoring a run's stored rollouts as a background job; its result lists the verdicts that change",
    )  # fmt: skip
    def post(self, request: Request, version_id: int) -> Response:
        version = version_get_for_user(version_id=version_id, user=request.user)
        data = _valid(RescoreIn, request.data)
        run = run_get_for_user(run_id=data["run"], user=request.user)
        job = verification_rescore_start(version=version, run=run, actor=request.user, limit=data["limit"])
        return Response(_job_json(job, request), status=status.HTTP_202_ACCEPTED)


class VersionJobListApi(APIView):
    @extend_schema(
        responses=JobOut(many=True), summary="A verifier version's recent audit and rescore jobs (no results)"
    )
    def get(self, request: Request, version_id: int) -> Response:
        version = version_get_for_user(version_id=version_id, user=request.user)
        jobs = jobs_for_version(version=version)
        return Response(JobOut(jobs, many=True, context={"request": request}).data)


class JobCancelApi(APIView):
    @extend_schema(
        request=None,
        responses=JobDetailOut,
        summary="Cancel a job: a queued one at once, a running one at its next chunk (your own; admins: any)",
    )
    def post(self, request: Request, job_id: int) -> Response:
        job = verification_job_cancel(
            job=job_get_for_user(job_id=job_id, user=request.user), actor=request.user
        )
        return Response(_job_json(job_get_for_user(job_id=job.pk, user=request.user), request))


class JobDetailApi(APIView):
    @extend_schema(
        responses=JobDetailOut, summary="One audit or rescore job: status, progress, and its result once done"
    )
    def get(self, request: Request, job_id: int) -> Response:
        return Response(_job_json(job_get_for_user(job_id=job_id, user=request.user), request))
