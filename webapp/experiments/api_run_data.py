"""What a run produced, over HTTP: metrics, rollouts (list and one with tokens), checkpoints, events."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.pagination import page_of, paginated_response
from webapp.api.query import parsed_query
from webapp.experiments.selectors import (
    checkpoints_for_run,
    events_for_run,
    metrics_for_run,
    rollout_detail,
    rollouts_for_run,
    run_get_for_user,
)
from webapp.experiments.serializers import (
    CheckpointOut,
    MetricsFilterIn,
    MetricsOut,
    RolloutDetailOut,
    RolloutFilterIn,
    RolloutOut,
    RunEventFilterIn,
    RunEventOut,
    rollout_detail_data,
)


class RunMetricsApi(APIView):
    @extend_schema(
        parameters=[MetricsFilterIn],
        responses=MetricsOut,
        summary="Metric series of a run, as columns (downsampled past max_points steps; min/max kept)",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = run_get_for_user(run_id=run_id, user=request.user)
        query = parsed_query(MetricsFilterIn, request)
        metrics = metrics_for_run(
            run=run,
            keys=query.get("keys"),
            since_step=query.get("since_step"),
            max_points=query["max_points"],
        )
        return Response({"step": run.step, "status": run.status, "metrics": metrics})


class RunRolloutListApi(APIView):
    @extend_schema(
        operation_id="runs_rollouts_list",
        parameters=[RolloutFilterIn],
        responses=page_of(RolloutOut),
        summary="Rollouts of a run",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = run_get_for_user(run_id=run_id, user=request.user)
        rollouts = rollouts_for_run(run=run, **parsed_query(RolloutFilterIn, request))
        return paginated_response(queryset=rollouts, serializer_class=RolloutOut, request=request, view=self)


class RunRolloutDetailApi(APIView):
    @extend_schema(responses=RolloutDetailOut, summary="One rollout with its per-token arrays")
    def get(self, request: Request, run_id: int, rollout_id: int) -> Response:
        run = run_get_for_user(run_id=run_id, user=request.user)
        return Response(rollout_detail_data(rollout_detail(run=run, rollout_id=rollout_id)))


class RunCheckpointListApi(APIView):
    @extend_schema(responses=CheckpointOut(many=True), summary="Checkpoints of a run")
    def get(self, request: Request, run_id: int) -> Response:
        run = run_get_for_user(run_id=run_id, user=request.user)
        return Response(CheckpointOut(checkpoints_for_run(run=run), many=True).data)


class RunEventListApi(APIView):
    @extend_schema(
        operation_id="runs_events_list",
        parameters=[RunEventFilterIn],
        responses=page_of(RunEventOut),
        summary="A run's event log",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = run_get_for_user(run_id=run_id, user=request.user)
        events = events_for_run(run=run, after_id=parsed_query(RunEventFilterIn, request).get("after_id"))
        return paginated_response(queryset=events, serializer_class=RunEventOut, request=request, view=self)
