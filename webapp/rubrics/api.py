"""Rubrics over HTTP: list/create in a project, read/replace/delete one. Viewers read; admins and owners edit."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.rubrics.selectors import rubric_get_for_user, rubrics_for_project
from webapp.rubrics.serializers import RubricIn, RubricOut, RubricSummaryOut
from webapp.rubrics.services import rubric_create, rubric_delete, rubric_update
from webapp.teams.selectors import project_get_for_user


class RubricListApi(APIView):
    @extend_schema(responses=RubricSummaryOut(many=True), summary="Rubrics of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        rubrics = rubrics_for_project(project=project).prefetch_related("criteria")
        return Response(RubricSummaryOut(rubrics, many=True).data)

    @extend_schema(request=RubricIn, responses={201: RubricOut}, summary="Create a rubric")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = RubricIn(data=request.data)
        data.is_valid(raise_exception=True)
        rubric = rubric_create(project=project, actor=request.user, **data.validated_data)
        return Response(
            RubricOut(rubric_get_for_user(rubric_id=rubric.pk, user=request.user)).data,
            status=status.HTTP_201_CREATED,
        )


class RubricDetailApi(APIView):
    @extend_schema(responses=RubricOut, summary="A rubric with its criteria")
    def get(self, request: Request, rubric_id: int) -> Response:
        return Response(RubricOut(rubric_get_for_user(rubric_id=rubric_id, user=request.user)).data)

    @extend_schema(request=RubricIn, responses=RubricOut, summary="Replace a rubric and its criteria")
    def put(self, request: Request, rubric_id: int) -> Response:
        rubric = rubric_get_for_user(rubric_id=rubric_id, user=request.user)
        data = RubricIn(data=request.data)
        data.is_valid(raise_exception=True)
        rubric_update(rubric=rubric, actor=request.user, **data.validated_data)
        return Response(RubricOut(rubric_get_for_user(rubric_id=rubric_id, user=request.user)).data)

    @extend_schema(responses={204: None}, summary="Delete a rubric")
    def delete(self, request: Request, rubric_id: int) -> Response:
        rubric_delete(rubric=rubric_get_for_user(rubric_id=rubric_id, user=request.user), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
