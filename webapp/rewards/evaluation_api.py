"""Reward-source evaluations over HTTP: start one (202 with the job), list a project's, poll one, cancel, export.

Views stay thin: parse, call evaluation_services / evaluation_selectors, answer. Errors take the API's one shape;
outsiders get 404. The job's ``result`` holds figures and the sources' stored entries (references such as
``rm:<id>``, never server paths or secret values).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.fields import StrictJSONField
from webapp.rewards import evaluation_exports
from webapp.rewards.evaluation_selectors import (
    evaluation_get_for_user,
    evaluation_queue_position,
    evaluations_for_project,
)
from webapp.rewards.evaluation_services import reward_evaluation_cancel, reward_evaluation_start
from webapp.rewards.models import JobStatus, RewardJob
from webapp.teams.selectors import project_get_for_user


class EvaluationIn(serializers.Serializer[None]):
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    sources = StrictJSONField(
        help_text='Reward sources: config verifiers entries ({"name", "params", "label"}), '
        '{"reward_model_version": id}, {"verifier_version": id}, or {"rubric": id} (with "judge_model", a local '
        "model or the rubric judge_model settings, when a criterion is scored by a judge), or a step scorer "
        '{"process_scorer": {"name": "prm"|"oracle_chain"|"monte_carlo", "params"}} (a PRM version counts as one).'
    )
    pairwise = StrictJSONField(required=False, allow_null=True, default=None,
                               help_text='{"dataset"|"annotation_task"|"run": id, "max_pairs"}')  # fmt: skip
    best_of_n = StrictJSONField(required=False, allow_null=True, default=None,
                                help_text='{"benchmark", "policy", "n", "problems", "temperature", "max_tokens"}')  # fmt: skip
    audit = serializers.BooleanField(required=False, default=False)
    audit_problems = serializers.IntegerField(required=False, min_value=1, max_value=500, default=20)
    agreement = StrictJSONField(
        required=False, allow_null=True, default=None, help_text='{"annotation_task": id}'
    )
    process = StrictJSONField(
        required=False, allow_null=True, default=None,
        help_text='{"problems", "samples_per_problem", "segmenter", "aggregate", "threshold", "bins", "labels": '
        '{"dataset", "format", "max_examples"}}: evaluate the step scorers among the sources as PRMs.',
    )  # fmt: skip
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**32 - 1, default=0)


class EvaluationOut(serializers.ModelSerializer[RewardJob]):
    # Strings, not enums, in the schema: drf-spectacular names enums after the field, and other ``kind`` and
    # ``status`` enums (annotation tasks', reward model versions', runs') would collide.
    kind = serializers.CharField(read_only=True, help_text="Always 'evaluate' here.")
    status = serializers.CharField(read_only=True, help_text=f"One of {', '.join(JobStatus.values)}.")
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    url = serializers.SerializerMethodField(help_text="Where to poll this evaluation.")
    page = serializers.SerializerMethodField(help_text="Its result page.")
    ahead_in_queue = serializers.SerializerMethodField(help_text="While queued: jobs ahead of it on 'eval'.")

    class Meta:
        model = RewardJob
        fields: tuple[str, ...] = (
            "id", "project", "kind", "name", "status", "progress", "error", "cancel_requested", "attempts",
            "created_by", "created_at", "started_at", "finished_at", "url", "page", "ahead_in_queue",
        )  # fmt: skip

    def get_url(self, job: RewardJob) -> str:
        return reverse("reward-evaluation-detail", kwargs={"job_id": job.pk})

    def get_page(self, job: RewardJob) -> str:
        return reverse("rewards:evaluation-detail", kwargs={"job_id": job.pk})

    def get_ahead_in_queue(self, job: RewardJob) -> int | None:
        position = evaluation_queue_position(job=job)
        return None if position is None else position.ahead


class EvaluationDetailOut(EvaluationOut):
    config = StrictJSONField(
        read_only=True, help_text="What was asked, with the sources resolved to entries."
    )
    result = StrictJSONField(read_only=True, help_text="Per source: pairwise, best_of_n, audit, agreement.")

    class Meta(EvaluationOut.Meta):
        fields = (*EvaluationOut.Meta.fields, "config", "result")


class EvaluationListApi(APIView):
    @extend_schema(responses={200: EvaluationOut(many=True)}, summary="A project's reward-source evaluations")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(EvaluationOut(evaluations_for_project(project=project), many=True).data)

    @extend_schema(
        request=EvaluationIn, responses={202: EvaluationDetailOut}, summary="Evaluate reward sources"
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        serializer = EvaluationIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(serializer.validated_data)
        name = data.pop("name")
        data = {k: v for k, v in data.items() if v is not None}
        job = reward_evaluation_start(project=project, actor=request.user, data=data, name=name)
        return Response(EvaluationDetailOut(job).data, status=status.HTTP_202_ACCEPTED)


class EvaluationDetailApi(APIView):
    @extend_schema(responses={200: EvaluationDetailOut}, summary="One evaluation: progress, then its figures")
    def get(self, request: Request, job_id: int) -> Response:
        return Response(EvaluationDetailOut(evaluation_get_for_user(job_id=job_id, user=request.user)).data)


class EvaluationCancelApi(APIView):
    @extend_schema(request=None, responses={200: EvaluationDetailOut}, summary="Cancel an evaluation")
    def post(self, request: Request, job_id: int) -> Response:
        job = evaluation_get_for_user(job_id=job_id, user=request.user)
        return Response(EvaluationDetailOut(reward_evaluation_cancel(job=job, actor=request.user)).data)


class EvaluationExportApi(APIView):
    @extend_schema(
        responses={200: OpenApiTypes.STR}, summary="The figures as CSV (one row per source) or JSON"
    )
    def get(self, request: Request, job_id: int, kind: str) -> HttpResponse:
        job = evaluation_get_for_user(job_id=job_id, user=request.user)
        body = evaluation_exports.to_csv(job) if kind == "csv" else evaluation_exports.to_json(job)
        content_type = "text/csv" if kind == "csv" else "application/json"
        response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="reward-evaluation-{job.pk}.{kind}"'
        return response
