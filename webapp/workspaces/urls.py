"""The workspaces API: saved runs-table views and members' chart layouts."""

from django.urls import URLPattern, path

from webapp.workspaces.api_chart_layouts import ChartLayoutApi
from webapp.workspaces.api_run_table import RunTableApi
from webapp.workspaces.api_run_views import RunViewDetailApi, RunViewListApi

urlpatterns: list[URLPattern] = [
    path("projects/<int:project_id>/chart-layout/", ChartLayoutApi.as_view(), name="chart-layout"),
    path("projects/<int:project_id>/runs/table/", RunTableApi.as_view(), name="run-table"),
    path("projects/<int:project_id>/run-views/", RunViewListApi.as_view(), name="run-view-list"),
    path("run-views/<int:view_id>/", RunViewDetailApi.as_view(), name="run-view-detail"),
]
