"""The workspaces API: saved runs-table views and members' chart layouts."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
