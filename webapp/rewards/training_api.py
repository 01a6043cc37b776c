"""Reward-model training over HTTP: start a job, poll any reward job (training or evaluation), cancel one.

``POST projects/<id>/reward-models/<rm id>/train/`` answers 202 with the job (``source``: Bradley-Terry from pairs;
``labels``: a process reward model from step labels, webapp/rewards/training_prm.py); ``GET reward-jobs/<id>/`` is what the
job page polls each second (kind-agnostic: evaluation jobs are read here too); ``POST reward-jobs/<id>/cancel/``.
Views stay thin; errors take the API's one shape; outsiders get 404.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.fields import StrictJSONField
from webapp.rewards.models import JobKind, RewardJob
from webapp.rewards.selectors import reward_model_get_for_user
from webapp.rewards.training_prm import prm_training_start
from webapp.rewards.training_selectors import reward_job_get_for_user
from webapp.rewards.training_services import reward_job_cancel, reward_training_start


class TrainIn(serializers.Serializer[None]):
    source = StrictJSONField(  # type: ignore[assignment]  # the body field "source" (DRF's Field has one too)
        required=False,
        default=None,
        help_text='A reward model (Bradley-Terry): where the pairs come from: {"annotation_task": id} (a pairwise '
        'task), {"dataset": id} (an uploaded JSONL file with prompt, chosen, rejected) or {"run": id, "verifier": '
        'key?, "per_prompt": 8} (a correct completion chosen over an incorrect one of the same prompt, from the '
        "run's stored rollouts).",
    )
    labels = StrictJSONField(
        required=False,
        default=None,
        help_text='A process reward model: where the step labels come from: {"source": "oracle", "policy": model, '
        '"problems": 200, "samples_per_problem": 2} (the chain task\'s own step check on the policy\'s samples), '
        '{"source": "monte_carlo", ..., "k": 4} (Math-Shepherd\'s share of k right continuations) or {"source": '
        '"file", "dataset": id, "format": "math_shepherd"|"prm800k"} (an uploaded step-labelled file).',
    )
    base_model = serializers.CharField(
        max_length=1000,
        help_text="tiny:<name>, checkpoint:<id> of this project, or a folder under the model roots.",
    )
    hyper = StrictJSONField(
        required=False,
        default=dict,
        help_text="Hyper-parameters: learning_rate, epochs, batch_size, max_length, ... (a PRM's: the trainer's "
        "PRMHyperParams, with soft_labels, label_threshold, eval_every).",
    )
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if (attrs.get("source") is None) == (attrs.get("labels") is None):
            message = (
                "Name either source (pairs: a reward model) or labels (step labels: a process reward model)."
            )
            raise serializers.ValidationError({"source": [message], "labels": [message]})
        return attrs


class RewardJobOut(serializers.ModelSerializer[RewardJob]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    config = StrictJSONField(read_only=True)
    progress = StrictJSONField(
        read_only=True, help_text="phase, step, total, eta_s, and the loss/accuracy series."
    )
    result = StrictJSONField(read_only=True)
    can_cancel = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    version_url = serializers.SerializerMethodField()

    class Meta:
        model = RewardJob
        fields = (
            "id", "project", "kind", "reward_model", "name", "config", "status", "progress", "result", "error",
            "cancel_requested", "can_cancel", "attempts", "output_version", "created_by", "created_at", "started_at",
            "finished_at", "url", "page_url", "version_url",
        )  # fmt: skip

    def get_can_cancel(self, job: RewardJob) -> bool:
        return job.status in ("queued", "running") and not job.cancel_requested

    def get_url(self, job: RewardJob) -> str:
        return reverse("reward-job-detail", kwargs={"job_id": job.pk})

    def get_page_url(self, job: RewardJob) -> str:
        return reverse("rewards:reward-job", kwargs={"job_id": job.pk})

    def get_version_url(self, job: RewardJob) -> str | None:
        if job.output_version_id is None:
            return None
        return reverse("rewards:version", kwargs={"version_id": job.output_version_id})


def _job_json(job: RewardJob) -> dict[str, Any]:
    return dict(RewardJobOut(job).data)


class TrainApi(APIView):
    @extend_schema(
        request=TrainIn, responses={202: RewardJobOut},
        summary="Train a new version of a reward model (Bradley-Terry, from pairs) or a process reward model (from "
        "step labels) as a background job (owners and admins)",
    )  # fmt: skip
    def post(self, request: Request, project_id: int, reward_model_id: int) -> Response:
        reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
        if reward_model.project_id != project_id:
            from django.http import Http404

            raise Http404("No such reward model in this project.")
        serializer = TrainIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data["labels"] is not None:
            job = prm_training_start(
                reward_model=reward_model, actor=request.user, labels=data["labels"], base_model=data["base_model"],
                hyper=data["hyper"], name=data["name"],
            )  # fmt: skip
        else:
            job = reward_training_start(
                reward_model=reward_model, actor=request.user, source=data["source"],
                base_model=data["base_model"], hyper=data["hyper"], name=data["name"],
            )  # fmt: skip
        return Response(_job_json(job), status=status.HTTP_202_ACCEPTED)


class RewardJobDetailApi(APIView):
    @extend_schema(
        responses=RewardJobOut, summary="One reward job (training or evaluation): status and progress"
    )
    def get(self, request: Request, job_id: int) -> Response:
        return Response(_job_json(reward_job_get_for_user(job_id=job_id, user=request.user)))


class RewardJobCancelApi(APIView):
    @extend_schema(
        request=None, responses=RewardJobOut,
        summary="Cancel a reward job: a queued one at once, a running one at its next step (your own; admins: any)",
    )  # fmt: skip
    def post(self, request: Request, job_id: int) -> Response:
        job = reward_job_get_for_user(job_id=job_id, user=request.user)
        if job.kind == JobKind.EVALUATE:
            from webapp.rewards.evaluation_services import reward_evaluation_cancel

            reward_evaluation_cancel(job=job, actor=request.user)
        else:
            reward_job_cancel(job=job, actor=request.user)
        return Response(_job_json(reward_job_get_for_user(job_id=job.pk, user=request.user)))
