"""``GET/PUT /api/projects/<id>/chart-layout/``: the requesting member's own chart layout in a project
(webapp/workspaces/chart_layouts.py); an outsider gets 404."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.fields import StrictJSONField
from webapp.teams.selectors import project_get_for_user
from webapp.workspaces.chart_layouts import (
    MAX_PANEL_SERIES,
    MAX_PANELS,
    MAX_PINNED,
    chart_layout_for_member,
    chart_layout_save,
)

SPEC_HELP = (
    f"pinned: up to {MAX_PINNED} metric keys, in pin order; panels: up to {MAX_PANELS} of "
    f'{{"id", "title", "series": up to {MAX_PANEL_SERIES} metric keys}}; x_axis: step, time or tokens; '
    "smoothing: 0 to 0.99 (EMA); log: a log y-axis."
)


class ChartLayoutIn(serializers.Serializer[None]):
    spec = StrictJSONField(help_text=SPEC_HELP)


class ChartLayoutOut(serializers.Serializer[None]):
    spec = StrictJSONField(help_text="The layout as stored, with its defaults filled in.")


class ChartLayoutApi(APIView):
    @extend_schema(responses=ChartLayoutOut, summary="Your chart layout in a project (pins, panels, x-axis)")
    def get(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(project_id=project_id, user=request.user)
        return Response({"spec": chart_layout_for_member(project=project, user=request.user)})

    @extend_schema(
        request=ChartLayoutIn, responses=ChartLayoutOut, summary="Replace your chart layout in a project"
    )
    def put(self, request: Request, project_id: int) -> Response:
        project = project_get_for_user(
            project_id=project_id, user=request.user
        )  # an outsider: 404 before any 400
        data = ChartLayoutIn(data=request.data)
        data.is_valid(raise_exception=True)
        spec = chart_layout_save(project=project, user=request.user, spec=data.validated_data["spec"])
        return Response({"spec": spec})
