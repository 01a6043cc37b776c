"""A project is a team's workspace; a membership gives one user one role in it."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    """Ordered from most to least capable; see webapp/teams/permissions.py for what each may do."""

    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    ANNOTATOR = "annotator", "Annotator"
    VIEWER = "viewer", "Viewer"


ROLE_RANK: dict[str, int] = {Role.VIEWER: 0, Role.ANNOTATOR: 1, Role.ADMIN: 2, Role.OWNER: 3}


class Project(models.Model):
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=140, unique=True)
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name", "id")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("project_id", "id")
        constraints = (models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user"),)

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"
