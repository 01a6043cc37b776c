"""Verifier fixtures: a definition "answer" (exact, first line) in alice's project, with its version 1; a
case-insensitive "casefold" version and a run whose stored verdicts it flips."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.helpers import rollout_record
from webapp.experiments.models import Run
from webapp.experiments.services import run_record_step
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


@pytest.fixture(autouse=True)
def _no_worker(settings: SettingsWrapper) -> None:
    """Jobs are executed in-process by the tests that want a result; nothing is sent to Celery."""
    settings.RLVR_ENQUEUE = False


@pytest.fixture
def run_with_rollouts(run: Run) -> Run:
    """Step 1 of ``run``: four rollouts with reference 'paris' whose stored verdicts a case-insensitive
    exact check flips twice (sample 0 becomes correct, sample 2 incorrect)."""
    records = [
        rollout_record(1, 0, 0, completion="Paris", answer="paris", correct=False),
        rollout_record(1, 0, 1, completion="paris", answer="paris", correct=True),
        rollout_record(1, 0, 2, completion="Lyon", answer="paris", correct=True),
        rollout_record(1, 0, 3, completion="Lyon", answer="paris", correct=False),
    ]
    run_record_step(run_id=run.pk, step=1, max_steps=2, metrics={}, rollouts=records)
    return run


@pytest.fixture
def casefold(project: Project, alice: User) -> VerifierVersion:
    """An exact check that ignores case (version 1 of the definition "casefold")."""
    definition = verifier_definition_create(
        project=project, actor=alice, name="casefold", verifier="exact", params={"case_sensitive": False}
    )
    return definition.versions.get(number=1)
