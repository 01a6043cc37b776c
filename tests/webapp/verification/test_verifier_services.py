"""Definitions and versions: validation by the trainer's schema, immutable versions, test cases on every edit."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from webapp.core.errors import Conflict, InvalidInput
from webapp.teams.models import Project
from webapp.verification.models import TestStatus, VerifierDefinition, VerifierVersion
from webapp.verification.services import (
    verifier_definition_create,
    verifier_definition_delete,
    verifier_definition_update,
    verifier_test_case_create,
    verifier_test_case_delete,
    verifier_version_create,
)


def test_creating_a_definition_stores_version_1_with_every_default_filled_in(
    version: VerifierVersion,
) -> None:
    assert version.number == 1 and version.verifier == "exact"
    assert version.params["extract"] == "first_line"
    assert version.params["ignore_trailing_period"] is True  # a default, filled in by the trainer's schema
    assert version.test_status == TestStatus.NO_CASES


def test_an_unknown_verifier_is_refused_with_the_valid_names(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput, match=r"valid names are: .*math") as err:
        verifier_definition_create(project=project, actor=alice, name="x", verifier="maths")
    assert "verifier" in err.value.fields


def test_bad_params_are_refused_with_the_trainers_message(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput, match="unknown parameter; valid parameters are") as err:
        verifier_definition_create(
            project=project, actor=alice, name="x", verifier="math", params={"tolerance": 1}
        )
    assert "params" in err.value.fields


def test_a_bad_regex_is_refused_when_saved(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput, match="not a valid regular expression"):
        verifier_definition_create(
            project=project,
            actor=alice,
            name="x",
            verifier="exact",
            params={"extract": "regex", "pattern": "("},
        )


def test_names_are_unique_in_a_project(definition: VerifierDefinition, project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput, match="already has a verifier named 'answer'"):
        verifier_definition_create(project=project, actor=alice, name=" answer ", verifier="exact")


def test_editing_creates_version_2_and_leaves_version_1_unchanged(
    definition: VerifierDefinition, version: VerifierVersion, alice: User
) -> None:
    v2 = verifier_version_create(
        definition=definition,
        actor=alice,
        verifier="exact",
        params={"case_sensitive": False},
        note="ignore case",
    )
    assert v2.number == 2 and v2.params["case_sensitive"] is False and v2.params["extract"] == "first_line"
    version.refresh_from_db()
    assert version.params["extract"] == "first_line" and version.params["case_sensitive"] is True


def test_a_saved_version_cannot_be_changed(version: VerifierVersion) -> None:
    version.params = {"extract": "full"}
    with pytest.raises(ValueError, match="immutable"):
        version.save()


def test_saved_cases_run_on_every_new_version_and_failures_mark_it(
    definition: VerifierDefinition, alice: User
) -> None:
    verifier_test_case_create(
        definition=definition,
        actor=alice,
        name="casing",
        completion="YES",
        reference="yes",
        expected_correct=True,
    )
    v1 = definition.versions.get(number=1)
    assert v1.test_status == TestStatus.FAILING  # case-sensitive exact rejects YES vs yes
    assert v1.test_results[0]["passed"] is False and v1.test_results[0]["correct"] is False
    v2 = verifier_version_create(
        definition=definition, actor=alice, verifier="exact", params={"case_sensitive": False}
    )
    assert v2.test_status == TestStatus.PASSING and v2.test_results[0]["passed"] is True
    v1.refresh_from_db()
    assert v1.test_status == TestStatus.FAILING  # old versions keep their result


def test_an_expected_rejection_passes_when_the_verifier_rejects(
    definition: VerifierDefinition, alice: User
) -> None:
    case = verifier_test_case_create(
        definition=definition, actor=alice, completion="41", reference="42", expected_correct=False
    )
    latest = definition.versions.get(number=1)
    assert latest.test_status == TestStatus.PASSING
    verifier_test_case_delete(case=case, actor=alice)
    latest.refresh_from_db()
    assert latest.test_status == TestStatus.NO_CASES


def test_a_case_needs_a_completion(definition: VerifierDefinition, alice: User) -> None:
    with pytest.raises(InvalidInput, match="needs a completion"):
        verifier_test_case_create(
            definition=definition, actor=alice, completion=" ", reference="1", expected_correct=True
        )


@pytest.mark.parametrize("role", ["viewer", "annotator"])
def test_viewers_and_annotators_cannot_edit(
    definition: VerifierDefinition, bob: User, join: Callable[[User, str | None], User], role: str
) -> None:
    join(bob, role)
    with pytest.raises(PermissionDenied):
        verifier_version_create(definition=definition, actor=bob, verifier="exact")
    with pytest.raises(PermissionDenied):
        verifier_test_case_create(
            definition=definition, actor=bob, completion="1", reference="1", expected_correct=True
        )


def test_an_admin_can_rename(
    definition: VerifierDefinition, bob: User, join: Callable[[User, str | None], User]
) -> None:
    join(bob, "admin")
    assert (
        verifier_definition_update(definition=definition, actor=bob, name="final answer").name
        == "final answer"
    )


def test_a_definition_used_by_a_run_cannot_be_deleted(
    definition: VerifierDefinition, version: VerifierVersion, alice: User, run: object
) -> None:
    from webapp.experiments.models import Run

    assert isinstance(run, Run)
    run.verifier_versions.add(version)
    with pytest.raises(Conflict, match="rename it instead"):
        verifier_definition_delete(definition=definition, actor=alice)


def test_an_unused_definition_can_be_deleted(definition: VerifierDefinition, alice: User) -> None:
    verifier_definition_delete(definition=definition, actor=alice)
    assert not VerifierDefinition.objects.filter(pk=definition.pk).exists()
