"""Writes: create and rename verifier definitions, add versions (each runs the saved test cases), edit cases.

Every function checks the actor's role (admins and owners edit; see webapp/teams/permissions.py) and
raises ApplicationError / InvalidInput with a message that says how to fix the input.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from trainer.errors import ConfigError, VerifierError
from trainer.verifiers import VERIFIERS, build_verifier
from webapp.core.errors import Conflict, InvalidInput
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, require_role
from webapp.teams.selectors import AnyUser
from webapp.verification import bench
from webapp.verification.models import TestStatus, VerifierDefinition, VerifierTestCase, VerifierVersion
from webapp.verification.selectors import canonical_params, latest_version, test_cases_for_definition

EDIT_VERIFIERS = EDIT_EXPERIMENTS  # who may define verifiers: those who may define experiments


def verifier_definition_create(
    *, project: Project, actor: AnyUser, name: str, verifier: str, params: Any = None, description: str = ""
) -> VerifierDefinition:
    """A new definition with its version 1."""
    require_role(project=project, user=actor, minimum=EDIT_VERIFIERS)
    name = _definition_name(project=project, name=name)
    validated = _validated(verifier, params)
    with transaction.atomic():
        definition = VerifierDefinition.objects.create(
            project=project, name=name, description=description, created_by=_who(actor)
        )
        _add_version(
            definition=definition, actor=actor, verifier=verifier, params=validated, note="first version"
        )
    return definition


def verifier_definition_update(
    *, definition: VerifierDefinition, actor: AnyUser, name: str | None = None, description: str | None = None
) -> VerifierDefinition:
    """Rename or re-describe a definition; its versions (and the runs that used them) are untouched."""
    require_role(project=definition.project, user=actor, minimum=EDIT_VERIFIERS)
    if name is not None:
        definition.name = _definition_name(project=definition.project, name=name, exclude_id=definition.pk)
    if description is not None:
        definition.description = description
    definition.save()
    return definition


def verifier_definition_delete(*, definition: VerifierDefinition, actor: AnyUser) -> None:
    """Delete a definition with its versions and cases; refused once a run has used one of its versions."""
    require_role(project=definition.project, user=actor, minimum=EDIT_VERIFIERS)
    used = VerifierVersion.objects.filter(definition=definition, runs__isnull=False).distinct().count()
    if used:
        raise Conflict(
            f"Runs used {used} version(s) of {definition.name!r}, so it is kept as their record; "
            "rename it instead of deleting it."
        )
    definition.delete()


def verifier_version_create(
    *, definition: VerifierDefinition, actor: AnyUser, verifier: str, params: Any = None, note: str = ""
) -> VerifierVersion:
    """Editing a verifier = a new version; the saved test cases run on it and set its test status."""
    require_role(project=definition.project, user=actor, minimum=EDIT_VERIFIERS)
    validated = _validated(verifier, params)
    with transaction.atomic():
        version = _add_version(
            definition=definition, actor=actor, verifier=verifier, params=validated, note=note
        )
        definition.save(update_fields=["updated_at"])
    return version


def verifier_test_case_create(
    *,
    definition: VerifierDefinition,
    actor: AnyUser,
    completion: str,
    reference: str | None,
    expected_correct: bool,
    name: str = "",
) -> VerifierTestCase:
    """Save a case; the latest version is checked again so its status includes the new case."""
    require_role(project=definition.project, user=actor, minimum=EDIT_VERIFIERS)
    if not completion.strip():
        raise InvalidInput(
            "A test case needs a completion.", {"completion": ["Paste the completion to score."]}
        )
    case = VerifierTestCase.objects.create(
        definition=definition, name=name.strip()[:200], completion=completion, reference=reference,
        expected_correct=expected_correct, created_by=_who(actor),
    )  # fmt: skip
    _recheck_latest(definition)
    return case


def verifier_test_case_delete(*, case: VerifierTestCase, actor: AnyUser) -> None:
    definition = case.definition
    require_role(project=definition.project, user=actor, minimum=EDIT_VERIFIERS)
    case.delete()
    _recheck_latest(definition)


def verifier_version_check(*, version: VerifierVersion) -> VerifierVersion:
    """Run the definition's saved test cases on ``version`` and store the status and per-case results."""
    cases = list(test_cases_for_definition(definition=version.definition))
    results = bench.check_cases(version, cases)
    if not results:
        version.test_status = TestStatus.NO_CASES
    else:
        version.test_status = TestStatus.PASSING if all(r["passed"] for r in results) else TestStatus.FAILING
    version.test_results = results
    version.save(update_fields=["test_status", "test_results"])
    return version


def _add_version(
    *, definition: VerifierDefinition, actor: AnyUser, verifier: str, params: dict[str, Any], note: str
) -> VerifierVersion:
    last = (
        VerifierVersion.objects.select_for_update()
        .filter(definition=definition)
        .aggregate(n=Max("number"))["n"]
    )
    try:
        with transaction.atomic():
            version = VerifierVersion.objects.create(
                definition=definition, number=(last or 0) + 1, verifier=verifier, params=params,
                note=note.strip()[:300], created_by=_who(actor),
            )  # fmt: skip
    except IntegrityError:
        raise Conflict(
            "Someone saved a version of this verifier at the same moment: reload and try again."
        ) from None
    return verifier_version_check(version=version)


def _recheck_latest(definition: VerifierDefinition) -> None:
    version = latest_version(definition=definition)
    if version is not None:
        verifier_version_check(version=version)


def _validated(verifier: str, params: Any) -> dict[str, Any]:
    """The params with every default filled in, or InvalidInput carrying the trainer's own message."""
    bench.refuse_reward_source(
        verifier
    )  # its endpoint or model folder is checked on the Reward models page only
    if params is not None and not isinstance(params, dict):
        raise InvalidInput(
            "params must be a JSON object.", {"params": ['Write an object, e.g. {"extract": "boxed"}.']}
        )
    if verifier not in VERIFIERS:  # the valid names offered are the definable ones
        message = f"unknown verifier {verifier!r}; valid names are: {', '.join(bench.verifier_names())}"
        raise InvalidInput(message, {"verifier": [message]})
    try:
        build_verifier(verifier, params or {})
    except ConfigError as err:  # a registry lookup refused the name
        raise InvalidInput(str(err), {"verifier": [str(err)]}) from None
    except VerifierError as err:  # the verifier's own schema refused a parameter
        raise InvalidInput(str(err), {"params": [str(err)]}) from None
    validated = canonical_params(verifier, params or {})
    assert validated is not None  # built() accepted them
    return validated


def _definition_name(*, project: Project, name: str, exclude_id: int | None = None) -> str:
    name = (name or "").strip()
    if not name:
        raise InvalidInput("A verifier needs a name.", {"name": ["This field may not be blank."]})
    if len(name) > 120:
        raise InvalidInput("The name is too long.", {"name": ["Use at most 120 characters."]})
    clash = VerifierDefinition.objects.filter(project=project, name=name)
    if exclude_id is not None:
        clash = clash.exclude(pk=exclude_id)
    if clash.exists():
        message = f"This project already has a verifier named {name!r}: pick another name or edit that one."
        raise InvalidInput(message, {"name": [message]})
    return name


def _who(actor: AnyUser) -> Any:
    return actor if actor.is_authenticated else None
