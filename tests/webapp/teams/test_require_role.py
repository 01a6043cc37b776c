from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.teams.models import Project, Role
from webapp.teams.permissions import require_role

Join = Callable[[User, str | None], User]
ORDER = [Role.VIEWER, Role.ANNOTATOR, Role.ADMIN, Role.OWNER]


@pytest.mark.parametrize("role", ORDER)
@pytest.mark.parametrize("minimum", ORDER)
def test_a_role_passes_exactly_the_checks_at_or_below_it(
    project: Project, join: Join, bob: User, role: Role, minimum: Role
) -> None:
    join(bob, role)
    if ORDER.index(role) >= ORDER.index(minimum):
        assert require_role(project=project, user=bob, minimum=minimum) == role
    else:
        with pytest.raises(PermissionDenied, match=f"needs the {minimum.label.lower()} role"):
            require_role(project=project, user=bob, minimum=minimum)


def test_an_outsider_is_told_the_project_does_not_exist(project: Project, bob: User) -> None:
    with pytest.raises(Http404):
        require_role(project=project, user=bob, minimum=Role.VIEWER)


def test_an_anonymous_user_is_told_the_project_does_not_exist(project: Project) -> None:
    with pytest.raises(Http404):
        require_role(project=project, user=AnonymousUser(), minimum=Role.VIEWER)
