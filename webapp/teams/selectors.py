"""Reads about projects and who belongs to them."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404

from webapp.teams.models import Membership, Project, Role

AnyUser = User | AnonymousUser


def projects_for_user(*, user: AnyUser) -> QuerySet[Project]:
    """The projects ``user`` is a member of, each annotated with ``role`` (the user's role in it)."""
    if not user.is_authenticated:
        return Project.objects.none()
    role = Membership.objects.filter(project=OuterRef("pk"), user=user).values("role")[:1]
    return Project.objects.filter(memberships__user=user).annotate(role=Subquery(role))


def membership_role(*, project: Project, user: AnyUser) -> Role | None:
    """The user's role in the project, or None for an outsider (or an anonymous user)."""
    if not user.is_authenticated:
        return None
    role = Membership.objects.filter(project=project, user=user).values_list("role", flat=True).first()
    return None if role is None else Role(role)


def project_get_for_user(*, project_id: int, user: AnyUser) -> Project:
    """The project, if ``user`` is a member; otherwise 404, so outsiders cannot probe which ids exist."""
    project = projects_for_user(user=user).filter(pk=project_id).first()
    if project is None:
        raise Http404("No such project.")
    return project


def memberships_for_project(*, project: Project) -> QuerySet[Membership]:
    return Membership.objects.filter(project=project).select_related("user").order_by("user__username")


def membership_get(*, project: Project, username: str) -> Membership:
    membership = memberships_for_project(project=project).filter(user__username=username).first()
    if membership is None:
        raise Http404("No such member.")
    return membership
