"""Verifier fixtures: a definition "answer" (exact, first line) in alice's project, with its version 1."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from webapp.teams.models import Project
from webapp.verification.models import VerifierDefinition, VerifierVersion
from webapp.verification.services import verifier_definition_create


@pytest.fixture
def definition(project: Project, alice: User) -> VerifierDefinition:
    return verifier_definition_create(
        project=project, actor=alice, name="answer", verifier="exact", params={"extract": "first_line"}
    )


@pytest.fixture
def version(definition: VerifierDefinition) -> VerifierVersion:
    return definition.versions.get(number=1)
