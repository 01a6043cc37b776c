"""Saved runs-table views over HTTP (webapp/workspaces/run_views.py): list and save a project's views, read,
overwrite or delete one. Anyone in the project reads them; saving needs ``SAVE_RUN_VIEWS``; changing or
deleting a view needs its creator or an admin. Outsiders get 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.fields import StrictJSONField
from webapp.teams.models import Project
from webapp.teams.selectors import project_get_for_user
from webapp.workspaces.models import RunTableView
from webapp.workspaces.run_views import (
    MAX_NAME,
    role_of,
    run_view_can_change,
    run_view_create,
    run_view_delete,
    run_view_get_for_user,
    run_view_update,
    run_views_for_project,
)


class RunViewOut(serializers.ModelSerializer[RunTableView]):
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    spec = StrictJSONField(read_only=True, help_text="Columns, sort, descending, filters, status, group_by.")
    can_change = serializers.SerializerMethodField(help_text="Whether you may overwrite or delete this view.")

    class Meta:
        model = RunTableView
        fields = ("id", "project", "name", "spec", "created_by", "created_at", "updated_at", "can_change")

    def get_can_change(self, view: RunTableView) -> bool:
        return run_view_can_change(view=view, user=self.context["user"], role=self.context["role"])


class RunViewIn(serializers.Serializer[None]):
    # Lengths and characters are checked by the service (run_views._clean_name), in one place for every caller.
    name = serializers.CharField(max_length=MAX_NAME * 2, allow_blank=True, trim_whitespace=False)
    spec = StrictJSONField(help_text="A RunTableSpec: columns, sort, descending, filters, status, group_by.")


class RunViewPatchIn(serializers.Serializer[None]):
    name = serializers.CharField(
        max_length=MAX_NAME * 2, allow_blank=True, trim_whitespace=False, required=False
    )
    spec = StrictJSONField(required=False)


def _valid(serializer_class: type[serializers.Serializer[None]], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _context(project: Project, request: Request) -> dict[str, Any]:
    """Who asks and their role, once per answer, for each view's ``can_change``."""
    return {"user": request.user, "role": role_of(project=project, user=request.user)}


def _out(view: RunTableView, request: Request) -> dict[str, Any]:
    return dict(RunViewOut(view, context=_context(view.project, request)).data)


class RunViewListApi(APIView):
    @extend_schema(responses=RunViewOut(many=True), summary="Saved views of a project's runs table")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        views = run_views_for_project(project=project)
        return Response(RunViewOut(views, many=True, context=_context(project, request)).data)

    @extend_schema(request=RunViewIn, responses={201: RunViewOut}, summary="Save a view of the runs table")
    def post(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        data = _valid(RunViewIn, request.data)
        view = run_view_create(project=project, actor=request.user, name=data["name"], spec=data["spec"])
        return Response(_out(view, request), status=status.HTTP_201_CREATED)


class RunViewDetailApi(APIView):
    @extend_schema(responses=RunViewOut, summary="One saved view of the runs table")
    def get(self, request: Request, view_id: int) -> Response:
        return Response(_out(run_view_get_for_user(view_id=view_id, user=request.user), request))

    @extend_schema(request=RunViewIn, responses=RunViewOut, summary="Overwrite a saved view (name and spec)")
    def put(self, request: Request, view_id: int) -> Response:
        view = run_view_get_for_user(view_id=view_id, user=request.user)
        data = _valid(RunViewIn, request.data)
        view = run_view_update(view=view, actor=request.user, name=data["name"], spec=data["spec"])
        return Response(_out(view, request))

    @extend_schema(
        request=RunViewPatchIn, responses=RunViewOut, summary="Rename a saved view or change its spec"
    )
    def patch(self, request: Request, view_id: int) -> Response:
        view = run_view_get_for_user(view_id=view_id, user=request.user)
        data = _valid(RunViewPatchIn, request.data)
        view = run_view_update(view=view, actor=request.user, name=data.get("name"), spec=data.get("spec"))
        return Response(_out(view, request))

    @extend_schema(responses={204: None}, summary="Delete a saved view")
    def delete(self, request: Request, view_id: int) -> Response:
        run_view_delete(view=run_view_get_for_user(view_id=view_id, user=request.user), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
