"""Writes for projects and memberships. Every function checks the actor's role first."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify

from webapp.core.errors import Conflict, InvalidInput
from webapp.teams.models import Membership, Project, Role
from webapp.teams.permissions import MANAGE_MEMBERS, MANAGE_OWNERS, require_role
from webapp.teams.selectors import AnyUser


def project_create(*, name: str, owner: User, description: str = "") -> Project:
    """A new project; its creator becomes its first owner."""
    name = name.strip()
    if not name:
        raise InvalidInput("A project needs a name.", {"name": ["This field may not be blank."]})
    with transaction.atomic():
        project = Project.objects.create(name=name, slug=_unique_slug(name), description=description)
        Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


def membership_add(*, project: Project, actor: AnyUser, username: str, role: str) -> Membership:
    """Add an existing user to the project. Admins add non-owners; only owners add owners."""
    require_role(project=project, user=actor, minimum=MANAGE_MEMBERS)
    new_role = _parse_role(role)
    if new_role == Role.OWNER:
        require_role(project=project, user=actor, minimum=MANAGE_OWNERS)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise InvalidInput(f"No user named {username!r}.", {"username": [f"No user named {username!r}."]})
    if Membership.objects.filter(project=project, user=user).exists():
        raise InvalidInput(
            f"{username} is already a member; change their role instead.",
            {"username": [f"{username} is already a member of this project."]},
        )
    return Membership.objects.create(project=project, user=user, role=new_role)


def membership_change_role(*, membership: Membership, actor: AnyUser, role: str) -> Membership:
    """Change a member's role. Making or unmaking an owner takes an owner; the last owner stays one."""
    project = membership.project
    require_role(project=project, user=actor, minimum=MANAGE_MEMBERS)
    new_role = _parse_role(role)
    if Role.OWNER in (membership.role, new_role):
        require_role(project=project, user=actor, minimum=MANAGE_OWNERS)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # serialise last-owner checks
        if membership.role == Role.OWNER and new_role != Role.OWNER:
            _refuse_if_last_owner(membership)
        membership.role = new_role
        membership.save(update_fields=["role"])
    return membership


def membership_remove(*, membership: Membership, actor: AnyUser) -> None:
    """Remove a member (anyone may leave). Removing an owner takes an owner; the last owner cannot go."""
    project = membership.project
    leaving = actor.is_authenticated and actor.pk == membership.user_id
    if not leaving:
        require_role(project=project, user=actor, minimum=MANAGE_MEMBERS)
        if membership.role == Role.OWNER:
            require_role(project=project, user=actor, minimum=MANAGE_OWNERS)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        if membership.role == Role.OWNER:
            _refuse_if_last_owner(membership)
        membership.delete()


def _refuse_if_last_owner(membership: Membership) -> None:
    owners = Membership.objects.filter(project_id=membership.project_id, role=Role.OWNER).count()
    if owners <= 1:
        raise Conflict(
            f"{membership.user} is the last owner of {membership.project.slug!r}: make another member an "
            "owner first."
        )


def _parse_role(role: str) -> Role:
    if role not in Role.values:
        raise InvalidInput(
            f"Unknown role {role!r}.",
            {"role": [f"{role!r} is not a role; use one of {', '.join(Role.values)}."]},
        )
    return Role(role)


def _unique_slug(name: str) -> str:
    base = (slugify(name) or "project")[:120]
    slug, n = base, 1
    while Project.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug
