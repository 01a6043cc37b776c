from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from webapp.core.errors import InvalidInput
from webapp.teams.models import Membership, Project, Role
from webapp.teams.selectors import membership_role, projects_for_user
from webapp.teams.services import project_create


def test_the_creator_of_a_project_becomes_its_owner(alice: User) -> None:
    project = project_create(name="Math RL", owner=alice)
    assert membership_role(project=project, user=alice) == Role.OWNER
    assert project.slug == "math-rl"


def test_two_projects_with_the_same_name_get_distinct_slugs(alice: User, bob: User) -> None:
    first = project_create(name="Lab", owner=alice)
    second = project_create(name="Lab", owner=bob)
    assert (first.slug, second.slug) == ("lab", "lab-2")


def test_a_blank_project_name_is_refused(alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        project_create(name="  ", owner=alice)
    assert "name" in err.value.fields
    assert Project.objects.count() == 0


def test_users_only_see_the_projects_they_belong_to(project: Project, alice: User, bob: User) -> None:
    assert list(projects_for_user(user=alice)) == [project]
    assert list(projects_for_user(user=bob)) == []


def test_the_project_list_carries_each_users_role(project: Project, bob: User) -> None:
    Membership.objects.create(project=project, user=bob, role=Role.VIEWER)
    assert projects_for_user(user=bob).get().role == "viewer"  # type: ignore[attr-defined]
