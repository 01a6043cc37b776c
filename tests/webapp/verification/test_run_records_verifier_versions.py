"""A run records the saved verifier versions its config scores with, and the run page shows them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.services import experiment_create, run_launch
from webapp.teams.models import Project
from webapp.verification.models import VerifierDefinition, VerifierVersion
from webapp.verification.services import verifier_definition_create, verifier_version_create


def launch_with(project: Project, alice: User, verifiers: list[dict[str, Any]]) -> Any:
    experiment = experiment_create(
        project=project, actor=alice, name="exp", config={**SMALL_CONFIG, "verifiers": verifiers}
    )
    return run_launch(experiment=experiment, actor=alice)


def test_the_pickers_config_entry_records_that_exact_version(
    project: Project, alice: User, definition: VerifierDefinition, version: VerifierVersion
) -> None:
    v2 = verifier_version_create(
        definition=definition, actor=alice, verifier="exact", params={"extract": "full"}
    )
    run = launch_with(project, alice, [version.config_entry])
    assert list(run.verifier_versions.all()) == [version]
    assert v2 not in run.verifier_versions.all()


def test_a_hand_typed_entry_with_the_same_params_matches(
    project: Project, alice: User, version: VerifierVersion
) -> None:
    run = launch_with(project, alice, [{"name": "exact", "params": {"extract": "first_line"}}])
    assert list(run.verifier_versions.all()) == [version]


def test_different_params_record_nothing(project: Project, alice: User, version: VerifierVersion) -> None:
    run = launch_with(project, alice, [{"name": "exact", "params": {"extract": "full"}}])
    assert run.verifier_versions.count() == 0


def test_the_label_picks_between_identical_versions(
    project: Project, alice: User, version: VerifierVersion
) -> None:
    twin = verifier_definition_create(
        project=project, actor=alice, name="Answer twin", verifier="exact", params={"extract": "first_line"}
    ).versions.get()
    run = launch_with(project, alice, [version.config_entry, {**twin.config_entry}])
    assert set(run.verifier_versions.all()) == {version, twin}


def test_the_run_page_links_the_versions(project: Project, alice: User, version: VerifierVersion) -> None:
    run = launch_with(project, alice, [version.config_entry])
    client = Client()
    client.force_login(alice)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'href="/verifier-versions/{version.pk}/"' in html and "answer v1" in html
