"""Runs over HTTP: list, launch (create = launch), read one, cancel, resume, queue again, and change
which rollouts a run keeps (``PATCH /api/runs/<id>/retention/``, webapp/experiments/retention.py).

Launch, resume and queue answer 503 ``{"message": ..., "extra": {"run_id": ...}}`` when the task queue
(Redis) refuses the run: it is then saved as ``not_queued`` and ``POST /api/runs/<id>/queue/`` sends it
again once the queue is back (webapp/core/dispatch.py).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.pagination import page_of, paginated_response
from webapp.api.query import parsed_query
from webapp.experiments.retention import describe_retention
from webapp.experiments.selectors import (
    experiment_get_for_user,
    run_get_for_user,
    runs_for_project,
    runs_for_user,
)
from webapp.experiments.serializers import (
    RunDetailOut,
    RunLaunchIn,
    RunListFilterIn,
    RunOut,
    RunRetentionIn,
    RunRetentionOut,
)
from webapp.experiments.services import run_cancel, run_launch, run_queue, run_resume, run_set_retention
from webapp.teams.selectors import project_get_for_user


class RunListApi(APIView):
    @extend_schema(
        operation_id="runs_list",
        parameters=[RunListFilterIn],
        responses=page_of(RunOut),
        summary="Runs of all your projects",
    )
    def get(self, request: Request) -> Response:
        query = parsed_query(RunListFilterIn, request)
        runs = runs_for_user(user=request.user, status=query.get("status"))
        if "experiment" in query:
            runs = runs.filter(experiment_id=query["experiment"])
        return paginated_response(queryset=runs, serializer_class=RunOut, request=request, view=self)

    @extend_schema(
        request=RunLaunchIn, responses={201: RunDetailOut}, summary="Launch a run of an experiment"
    )
    def post(self, request: Request) -> Response:
        data = RunLaunchIn(data=request.data)
        data.is_valid(raise_exception=True)
        experiment = experiment_get_for_user(
            experiment_id=data.validated_data["experiment"], user=request.user
        )
        run = run_launch(
            experiment=experiment, actor=request.user, retention=data.validated_data.get("retention")
        )
        return Response(RunDetailOut(run).data, status=status.HTTP_201_CREATED)


class ProjectRunListApi(APIView):
    @extend_schema(
        operation_id="projects_runs_list",
        parameters=[RunListFilterIn],
        responses=page_of(RunOut),
        summary="Runs of a project",
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        query = parsed_query(RunListFilterIn, request)
        runs = runs_for_project(
            project=project, experiment_id=query.get("experiment"), status=query.get("status")
        )
        return paginated_response(queryset=runs, serializer_class=RunOut, request=request, view=self)


class ExperimentRunListApi(APIView):
    @extend_schema(
        operation_id="experiments_runs_list",
        parameters=[RunListFilterIn],
        responses=page_of(RunOut),
        summary="Runs of an experiment",
    )
    def get(self, request: Request, experiment_id: int) -> Response:
        experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
        query = parsed_query(RunListFilterIn, request)
        runs = runs_for_project(
            project=experiment.project, experiment_id=experiment.pk, status=query.get("status")
        )
        return paginated_response(queryset=runs, serializer_class=RunOut, request=request, view=self)

    @extend_schema(request=None, responses={201: RunDetailOut}, summary="Launch a run of this experiment")
    def post(self, request: Request, experiment_id: int) -> Response:
        experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
        run = run_launch(experiment=experiment, actor=request.user)
        return Response(RunDetailOut(run).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    @extend_schema(responses=RunDetailOut)
    def get(self, request: Request, run_id: int) -> Response:
        return Response(RunDetailOut(run_get_for_user(run_id=run_id, user=request.user)).data)


class RunCancelApi(APIView):
    @extend_schema(request=None, responses=RunDetailOut, summary="Cancel (queued) or stop at the next step")
    def post(self, request: Request, run_id: int) -> Response:
        run = run_cancel(run=run_get_for_user(run_id=run_id, user=request.user), actor=request.user)
        return Response(RunDetailOut(run).data)


class RunResumeApi(APIView):
    @extend_schema(request=None, responses=RunDetailOut, summary="Resume a failed or cancelled run")
    def post(self, request: Request, run_id: int) -> Response:
        run = run_resume(run=run_get_for_user(run_id=run_id, user=request.user), actor=request.user)
        return Response(RunDetailOut(run).data)


class RunQueueApi(APIView):
    @extend_schema(
        request=None,
        responses=RunDetailOut,
        summary="Queue again a run the task queue refused (status not_queued); 503 while it is still down",
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = run_queue(run=run_get_for_user(run_id=run_id, user=request.user), actor=request.user)
        return Response(RunDetailOut(run).data)


class RunRetentionApi(APIView):
    @extend_schema(
        request=RunRetentionIn,
        responses=RunRetentionOut,
        summary="Change which rollouts a run keeps; rollouts the new policy lets go are deleted at once",
    )
    def patch(self, request: Request, run_id: int) -> Response:
        run = run_get_for_user(run_id=run_id, user=request.user)  # an outsider gets 404 before any 400
        data = RunRetentionIn(data=request.data)
        data.is_valid(raise_exception=True)
        run, deleted = run_set_retention(
            run=run, actor=request.user, retention=data.validated_data["retention"]
        )
        return Response(
            {
                "retention": run.retention,
                "description": describe_retention(run.retention),
                "deleted_rollouts": deleted,
            }
        )
