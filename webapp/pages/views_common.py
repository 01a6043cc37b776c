"""Helpers the page views share: role flags for templates and turning service errors into messages."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from webapp.core.errors import ApplicationError
from webapp.teams.models import Project, Role
from webapp.teams.permissions import (
    EDIT_EXPERIMENTS,
    MANAGE_MEMBERS,
    MANAGE_OWNERS,
    OPERATE_RUNS,
    role_at_least,
)
from webapp.teams.selectors import membership_role


def role_context(*, project: Project, request: HttpRequest) -> dict[str, object]:
    """The user's role and what it lets them do, so templates render only the controls it allows."""
    role = membership_role(project=project, user=request.user) or Role.VIEWER
    return {
        "role": role,
        "can_edit": role_at_least(role, EDIT_EXPERIMENTS),
        "can_operate": role_at_least(role, OPERATE_RUNS),
        "can_manage_members": role_at_least(role, MANAGE_MEMBERS),
        "can_manage_owners": role_at_least(role, MANAGE_OWNERS),
    }


def report_error(request: HttpRequest, err: Exception) -> None:
    """A refused service call, as a message shown at the top of the next page."""
    if isinstance(err, ApplicationError):
        messages.error(request, err.message)
    elif isinstance(err, PermissionDenied):
        messages.error(request, str(err) or "Your role in this project does not allow that.")
    else:
        raise err
