"""How people arrange what they look at: saved views of a project's runs table, and each member's chart layout
(pinned charts, custom panels, x-axis) shared by the run and compare pages. Each ``spec`` is validated by a
bounded pydantic model before it is stored (``run_views.py``, ``chart_layouts.py``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.teams.models import Project


class RunTableView(models.Model):
    """A named arrangement of the runs table (columns, sort, filters, grouping), visible to the whole project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="run_table_views")
    name = models.CharField(max_length=100)
    spec = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name", "id")
        constraints = (
            models.UniqueConstraint(fields=["project", "name"], name="run_view_name_unique_in_project"),
        )

    def __str__(self) -> str:
        return self.name


class ChartLayout(models.Model):
    """One member's chart arrangement in one project: pinned keys, custom panels, x-axis."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="chart_layouts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    spec = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["project", "user"], name="one_chart_layout_per_member"),
        )

    def __str__(self) -> str:
        return f"{self.user_id}@{self.project_id}"
