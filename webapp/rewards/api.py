"""Reward models, versions and project secrets over HTTP. Views stay thin: a serializer parses, a selector or
service does the work. Errors take the API's one shape; outsiders get 404. A secret's value goes in (PUT) and never
comes out: the list answers names and dates, a PUT answers the same row."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.rewards.models import RewardModel, SourceKind
from webapp.rewards.selectors import (
    reward_model_get_for_user,
    reward_models_for_project,
    secrets_for_project,
    version_get_for_user,
    versions_for_project,
    versions_for_reward_model,
)
from webapp.rewards.serializers import (
    RewardModelIn,
    RewardModelOut,
    RewardModelPatchIn,
    RewardVersionIn,
    RewardVersionOut,
    SecretIn,
    SecretOut,
)
from webapp.rewards.services import (
    project_secret_delete,
    project_secret_set,
    reward_model_create,
    reward_model_delete,
    reward_model_update,
    version_create_judge,
    version_create_prm,
    version_create_scalar,
)
from webapp.teams.selectors import project_get_for_user


def _valid(serializer_class: type[serializers.Serializer[None]], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _reward_model_json(reward_model: RewardModel) -> dict[str, Any]:
    versions = versions_for_reward_model(reward_model=reward_model)
    return {**RewardModelOut(reward_model).data, "versions": RewardVersionOut(versions, many=True).data}


class RewardModelListApi(APIView):
    @extend_schema(responses=RewardModelOut(many=True), summary="Reward models of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(RewardModelOut(reward_models_for_project(project=project), many=True).data)

    @extend_schema(
        request=RewardModelIn, responses={201: OpenApiTypes.OBJECT}, summary="Create a reward model"
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        reward_model = reward_model_create(
            project=project, actor=request.user, **_valid(RewardModelIn, request.data)
        )
        return Response(_reward_model_json(reward_model), status=status.HTTP_201_CREATED)


class ProjectVersionListApi(APIView):
    @extend_schema(
        responses=RewardVersionOut(many=True),
        summary="Every reward model version of a project, with the config entry to use (the experiment form's picker)",
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(RewardVersionOut(versions_for_project(project=project), many=True).data)


class RewardModelDetailApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="A reward model with its versions")
    def get(self, request: Request, reward_model_id: int) -> Response:
        return Response(
            _reward_model_json(reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user))
        )

    @extend_schema(request=RewardModelPatchIn, responses=OpenApiTypes.OBJECT, summary="Rename or re-describe")
    def patch(self, request: Request, reward_model_id: int) -> Response:
        reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
        data = _valid(RewardModelPatchIn, request.data)
        return Response(
            _reward_model_json(reward_model_update(reward_model=reward_model, actor=request.user, **data))
        )

    @extend_schema(responses={204: None}, summary="Delete a reward model no run has scored with")
    def delete(self, request: Request, reward_model_id: int) -> Response:
        reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
        reward_model_delete(reward_model=reward_model, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class VersionListApi(APIView):
    @extend_schema(responses=RewardVersionOut(many=True), summary="Versions of a reward model, newest first")
    def get(self, request: Request, reward_model_id: int) -> Response:
        reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
        return Response(
            RewardVersionOut(versions_for_reward_model(reward_model=reward_model), many=True).data
        )

    @extend_schema(
        request=RewardVersionIn, responses={201: RewardVersionOut},
        summary="Add a version: scalar or prm from a checkpoint folder or checkpoint:<id>, or judge from an endpoint",
    )  # fmt: skip
    def post(self, request: Request, reward_model_id: int) -> Response:
        reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
        data = _valid(RewardVersionIn, request.data)
        if data["kind"] in (SourceKind.SCALAR, SourceKind.PRM):
            create = version_create_prm if data["kind"] == SourceKind.PRM else version_create_scalar
            version = create(
                reward_model=reward_model, actor=request.user, model=data["model"], params=data["params"],
                note=data["note"],
            )  # fmt: skip
        else:
            version = version_create_judge(
                reward_model=reward_model, actor=request.user, params=data["params"], note=data["note"]
            )
        return Response(RewardVersionOut(version).data, status=status.HTTP_201_CREATED)


class VersionDetailApi(APIView):
    @extend_schema(responses=RewardVersionOut, summary="One reward model version")
    def get(self, request: Request, version_id: int) -> Response:
        return Response(RewardVersionOut(version_get_for_user(version_id=version_id, user=request.user)).data)


class SecretListApi(APIView):
    @extend_schema(
        responses=SecretOut(many=True), summary="The project's secrets: names and dates, never values"
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(SecretOut(secrets_for_project(project=project), many=True).data)


class SecretDetailApi(APIView):
    @extend_schema(
        request=SecretIn, responses=SecretOut,
        summary="Set a secret (owners and admins): stored encrypted; the answer never holds the value",
    )  # fmt: skip
    def put(self, request: Request, project_id: int, name: str) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = _valid(SecretIn, request.data)
        row = project_secret_set(project=project, actor=request.user, name=name, value=data["value"])
        (shown,) = [s for s in secrets_for_project(project=project) if s.name == row.name]
        return Response(SecretOut(shown).data)

    @extend_schema(responses={204: None}, summary="Delete a secret (owners and admins)")
    def delete(self, request: Request, project_id: int, name: str) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        project_secret_delete(project=project, actor=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)
