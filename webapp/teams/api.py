"""Projects and memberships over HTTP. Views only parse, call a service or selector, and serialise."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.auth import signed_in_user
from webapp.teams.models import Membership, Project, Role
from webapp.teams.selectors import (
    membership_get,
    memberships_for_project,
    project_get_for_user,
    projects_for_user,
)
from webapp.teams.services import membership_add, membership_change_role, membership_remove, project_create


class ProjectOut(serializers.ModelSerializer[Project]):
    role = serializers.ChoiceField(
        choices=Role.choices, read_only=True, help_text="Your role in the project."
    )

    class Meta:
        model = Project
        fields = ("id", "name", "slug", "description", "created_at", "role")


class ProjectIn(serializers.Serializer[None]):
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(required=False, allow_blank=True, default="")


class MembershipOut(serializers.ModelSerializer[Membership]):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ("id", "username", "role", "created_at")


class MembershipIn(serializers.Serializer[None]):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)


class MembershipRoleIn(serializers.Serializer[None]):
    role = serializers.ChoiceField(choices=Role.choices)


class ProjectListApi(APIView):
    @extend_schema(responses=ProjectOut(many=True), summary="Projects you are a member of")
    def get(self, request: Request) -> Response:
        return Response(ProjectOut(projects_for_user(user=request.user), many=True).data)

    @extend_schema(
        request=ProjectIn, responses={201: ProjectOut}, summary="Create a project (you become owner)"
    )
    def post(self, request: Request) -> Response:
        data = ProjectIn(data=request.data)
        data.is_valid(raise_exception=True)
        project = project_create(owner=signed_in_user(request), **data.validated_data)
        project = project_get_for_user(project_id=project.pk, user=request.user)
        return Response(ProjectOut(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailApi(APIView):
    @extend_schema(responses=ProjectOut)
    def get(self, request: Request, project_id: int) -> Response:
        return Response(ProjectOut(project_get_for_user(project_id=project_id, user=request.user)).data)


class MembershipListApi(APIView):
    @extend_schema(responses=MembershipOut(many=True), summary="Members of a project")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response(MembershipOut(memberships_for_project(project=project), many=True).data)

    @extend_schema(request=MembershipIn, responses={201: MembershipOut}, summary="Add a user to a project")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = MembershipIn(data=request.data)
        data.is_valid(raise_exception=True)
        membership = membership_add(project=project, actor=request.user, **data.validated_data)
        return Response(MembershipOut(membership).data, status=status.HTTP_201_CREATED)


class MembershipDetailApi(APIView):
    @extend_schema(request=MembershipRoleIn, responses=MembershipOut, summary="Change a member's role")
    def patch(self, request: Request, project_id: int, username: str) -> Response:
        membership = _membership(request, project_id, username)
        data = MembershipRoleIn(data=request.data)
        data.is_valid(raise_exception=True)
        membership = membership_change_role(membership=membership, actor=request.user, **data.validated_data)
        return Response(MembershipOut(membership).data)

    @extend_schema(responses={204: None}, summary="Remove a member (or leave the project)")
    def delete(self, request: Request, project_id: int, username: str) -> Response:
        membership_remove(membership=_membership(request, project_id, username), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _membership(request: Request, project_id: int, username: str) -> Membership:
    project = project_get_for_user(project_id=project_id, user=request.user)
    return membership_get(project=project, username=username)
