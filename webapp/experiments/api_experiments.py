"""Experiments over HTTP: list/create in a project, read/edit/delete one, and the config schema."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from trainer.config import config_schema
from webapp.experiments.selectors import experiment_get_for_user, experiments_for_project
from webapp.experiments.serializers import ExperimentIn, ExperimentOut, ExperimentUpdateIn
from webapp.experiments.services import experiment_create, experiment_delete, experiment_update
from webapp.teams.selectors import project_get_for_user


class ConfigSchemaApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="JSON schema of an experiment config")
    def get(self, request: Request) -> Response:
        return Response(config_schema())


class ExperimentListApi(APIView):
    @extend_schema(responses=ExperimentOut(many=True), summary="Experiments of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(ExperimentOut(experiments_for_project(project=project), many=True).data)

    @extend_schema(request=ExperimentIn, responses={201: ExperimentOut}, summary="Create an experiment")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = ExperimentIn(data=request.data)
        data.is_valid(raise_exception=True)
        experiment = experiment_create(project=project, actor=request.user, **data.validated_data)
        return Response(ExperimentOut(experiment).data, status=status.HTTP_201_CREATED)


class ExperimentDetailApi(APIView):
    @extend_schema(responses=ExperimentOut)
    def get(self, request: Request, experiment_id: int) -> Response:
        return Response(
            ExperimentOut(experiment_get_for_user(experiment_id=experiment_id, user=request.user)).data
        )

    @extend_schema(request=ExperimentUpdateIn, responses=ExperimentOut, summary="Edit an experiment")
    def patch(self, request: Request, experiment_id: int) -> Response:
        experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
        data = ExperimentUpdateIn(data=request.data)
        data.is_valid(raise_exception=True)
        experiment = experiment_update(experiment=experiment, actor=request.user, **data.validated_data)
        return Response(ExperimentOut(experiment).data)

    @extend_schema(responses={204: None}, summary="Delete an experiment and its runs")
    def delete(self, request: Request, experiment_id: int) -> Response:
        experiment = experiment_get_for_user(experiment_id=experiment_id, user=request.user)
        experiment_delete(experiment=experiment, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
