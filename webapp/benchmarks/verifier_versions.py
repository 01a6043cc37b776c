"""A benchmark may score with a saved verifier version of its project (webapp/verification), so a table
says exactly which verifier and params produced it. The app is optional: without it nothing is offered."""

from __future__ import annotations

from typing import Any

from django.apps import apps

from webapp.core.errors import InvalidInput
from webapp.teams.models import Project


def verification_installed() -> bool:
    return apps.is_installed("webapp.verification")


def verifier_version_choices(*, project: Project) -> list[dict[str, Any]]:
    """``[{"id", "label", "verifier"}]`` for the form's picker (empty without the verification app)."""
    if not verification_installed():
        return []
    from webapp.verification.selectors import versions_for_project

    return [
        {"id": v.pk, "label": f"{v.definition.name} v{v.number}", "verifier": v.verifier}
        for v in versions_for_project(project=project)
    ]


def verifier_spec_for_version(*, project: Project, version_id: int) -> dict[str, Any]:
    """The ``verifiers`` entry (registry name + params) of a saved version of this project."""
    message = f"No saved verifier version {version_id} in this project: pick one from the list."
    if not verification_installed():
        raise InvalidInput(message, {"verifier_version": [message]})
    from webapp.verification.selectors import versions_for_project

    version = versions_for_project(project=project).filter(pk=version_id).first()
    if version is None:
        raise InvalidInput(message, {"verifier_version": [message]})
    return {"name": version.verifier, "params": dict(version.params)}
