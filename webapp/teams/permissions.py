"""Who may do what in a project. Every API view and service goes through ``require_role``.

Capabilities by role (each includes those of the roles below it):

- viewer: read everything in the project (experiments, runs, metrics, rollouts, datasets)
- annotator: + annotate rollouts (rubric scores; a later issue)
- admin: + create/edit experiments and datasets, launch/cancel/resume runs, manage members who are not owners
- owner: + make or remove owners, everything else

An outsider gets 404 for every project object (not 403): whether a project exists is itself private.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.teams.models import ROLE_RANK, Project, Role
from webapp.teams.selectors import AnyUser, membership_role

# The minimum role for each capability, named for the call sites.
READ = Role.VIEWER
ANNOTATE = Role.ANNOTATOR
EDIT_EXPERIMENTS = Role.ADMIN
OPERATE_RUNS = Role.ADMIN
MANAGE_MEMBERS = Role.ADMIN
MANAGE_OWNERS = Role.OWNER


def role_at_least(role: Role | str, minimum: Role | str) -> bool:
    return ROLE_RANK[role] >= ROLE_RANK[minimum]


def require_role(*, project: Project, user: AnyUser, minimum: Role) -> Role:
    """The user's role if it is at least ``minimum``; Http404 for an outsider, PermissionDenied otherwise."""
    role = membership_role(project=project, user=user)
    if role is None:
        raise Http404("No such project.")
    if not role_at_least(role, minimum):
        raise PermissionDenied(
            f"This needs the {minimum.label.lower()} role (or higher) in project {project.slug!r}; "
            f"you are {role.label.lower()}. Ask an owner or admin of the project."
        )
    return role
