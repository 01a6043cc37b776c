from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from webapp.core.errors import Conflict, InvalidInput
from webapp.teams.models import Membership, Project, Role
from webapp.teams.services import membership_add, membership_change_role, membership_remove

Join = Callable[[User, str | None], User]


def membership(project: Project, user: User) -> Membership:
    return Membership.objects.get(project=project, user=user)


def test_an_admin_adds_a_member_by_username(project: Project, join: Join, bob: User, charlie: User) -> None:
    join(bob, "admin")
    added = membership_add(project=project, actor=bob, username="charlie", role="annotator")
    assert (added.user, added.role) == (charlie, "annotator")


def test_an_admin_cannot_make_an_owner(project: Project, join: Join, bob: User, charlie: User) -> None:
    join(bob, "admin")
    with pytest.raises(PermissionDenied):
        membership_add(project=project, actor=bob, username="charlie", role="owner")


def test_an_owner_can_make_another_owner(project: Project, alice: User, charlie: User) -> None:
    assert membership_add(project=project, actor=alice, username="charlie", role="owner").role == "owner"


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_viewers_and_annotators_cannot_add_members(
    project: Project, join: Join, bob: User, charlie: User, role: str
) -> None:
    join(bob, role)
    with pytest.raises(PermissionDenied):
        membership_add(project=project, actor=bob, username="charlie", role="viewer")


def test_an_outsider_adding_members_is_told_the_project_does_not_exist(
    project: Project, bob: User, charlie: User
) -> None:
    with pytest.raises(Http404):
        membership_add(project=project, actor=bob, username="charlie", role="viewer")


def test_adding_an_unknown_user_names_the_username_field(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        membership_add(project=project, actor=alice, username="nobody", role="viewer")
    assert err.value.fields == {"username": ["No user named 'nobody'."]}


def test_adding_someone_twice_is_refused(project: Project, join: Join, alice: User, bob: User) -> None:
    join(bob, "viewer")
    with pytest.raises(InvalidInput, match="already a member"):
        membership_add(project=project, actor=alice, username="bob", role="admin")


def test_an_unknown_role_is_refused(project: Project, alice: User, bob: User) -> None:
    with pytest.raises(InvalidInput) as err:
        membership_add(project=project, actor=alice, username="bob", role="superuser")
    assert "role" in err.value.fields


def test_an_admin_changes_a_viewer_into_an_annotator(
    project: Project, join: Join, bob: User, charlie: User
) -> None:
    join(bob, "admin")
    join(charlie, "viewer")
    changed = membership_change_role(membership=membership(project, charlie), actor=bob, role="annotator")
    assert changed.role == "annotator"


def test_an_admin_cannot_demote_an_owner(project: Project, join: Join, alice: User, bob: User) -> None:
    join(bob, "admin")
    with pytest.raises(PermissionDenied):
        membership_change_role(membership=membership(project, alice), actor=bob, role="viewer")


def test_the_last_owner_cannot_step_down(project: Project, alice: User) -> None:
    with pytest.raises(Conflict, match="last owner"):
        membership_change_role(membership=membership(project, alice), actor=alice, role="admin")


def test_an_owner_can_step_down_once_there_is_another(
    project: Project, join: Join, alice: User, bob: User
) -> None:
    join(bob, "owner")
    assert (
        membership_change_role(membership=membership(project, alice), actor=alice, role="admin").role
        == "admin"
    )


def test_the_last_owner_cannot_be_removed(project: Project, alice: User) -> None:
    with pytest.raises(Conflict, match="last owner"):
        membership_remove(membership=membership(project, alice), actor=alice)
    assert Membership.objects.filter(project=project, role=Role.OWNER).count() == 1


def test_an_admin_cannot_remove_an_owner(
    project: Project, join: Join, alice: User, bob: User, charlie: User
) -> None:
    join(bob, "admin")
    join(charlie, "owner")
    with pytest.raises(PermissionDenied):
        membership_remove(membership=membership(project, charlie), actor=bob)


def test_an_admin_removes_a_viewer(project: Project, join: Join, bob: User, charlie: User) -> None:
    join(bob, "admin")
    join(charlie, "viewer")
    membership_remove(membership=membership(project, charlie), actor=bob)
    assert not Membership.objects.filter(project=project, user=charlie).exists()


def test_any_member_can_leave_a_project(project: Project, join: Join, charlie: User) -> None:
    join(charlie, "viewer")
    membership_remove(membership=membership(project, charlie), actor=charlie)
    assert not Membership.objects.filter(project=project, user=charlie).exists()
