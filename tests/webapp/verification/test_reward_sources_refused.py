"""A verifier definition may not name a model or endpoint reward source (``judge``, ``reward_model``).

Those are defined on the project's Reward models page, which confines a judge's endpoint to the server's
allow-list and a reward model to the project's own folders. A verifier definition skips those checks, and its
versions run on the test bench (any reader), in audits, rescores and annotation scoring jobs: so the name is
refused when saved, never offered, and a version saved before the rule is never built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from webapp.core.errors import InvalidInput
from webapp.teams.models import Project
from webapp.verification import bench
from webapp.verification.job_services import verification_audit_start
from webapp.verification.models import VerificationJob, VerifierDefinition, VerifierVersion
from webapp.verification.services import verifier_definition_create, verifier_version_create

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]

# Params each source's own schema accepts: only the definition rule refuses them.
SOURCES: dict[str, dict[str, Any]] = {
    "judge": {"base_url": "http://169.254.169.254/latest", "model": "grader"},
    "reward_model": {"model": "/etc"},
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_definition_naming_a_reward_source_is_refused_with_where_to_add_it(
    project: Project, alice: User, source: str
) -> None:
    with pytest.raises(InvalidInput, match="Reward models page") as err:
        verifier_definition_create(
            project=project, actor=alice, name="x", verifier=source, params=SOURCES[source]
        )
    assert list(err.value.fields) == ["verifier"] and "Reward models page" in err.value.fields["verifier"][0]
    assert not VerifierDefinition.objects.filter(project=project).exists()


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_new_version_naming_a_reward_source_is_refused(
    definition: VerifierDefinition, alice: User, source: str
) -> None:
    with pytest.raises(InvalidInput, match=f"'{source}' is a reward source") as err:
        verifier_version_create(definition=definition, actor=alice, verifier=source, params=SOURCES[source])
    assert "verifier" in err.value.fields
    assert definition.versions.count() == 1


def test_an_unknown_name_lists_only_the_names_a_definition_may_use(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput, match=r"valid names are: .*math") as err:
        verifier_definition_create(project=project, actor=alice, name="x", verifier="maths")
    assert "judge" not in err.value.message and "reward_model" not in err.value.message


def test_the_api_refuses_a_reward_source_in_the_one_error_shape(
    api: Api, bob: User, join: Join, project: Project
) -> None:
    join(bob, "admin")
    resp = api(bob).post(
        f"/api/projects/{project.pk}/verifiers/",
        {"name": "grader", "verifier": "judge", "params": SOURCES["judge"]},
        format="json",
    )
    assert resp.status_code == 400
    body = resp.json()
    assert "Reward models page" in body["message"]
    assert "Reward models page" in body["extra"]["fields"]["verifier"][0]


def test_the_registry_and_the_form_offer_no_reward_source(api: Api, alice: User, project: Project) -> None:
    names = {item["name"] for item in api(alice).get("/api/verifier-registry/").json()}
    assert {"math", "exact", "code"} <= names
    assert not names & {"judge", "reward_model"}
    client = Client()
    client.force_login(alice)
    page = client.get(f"/projects/{project.pk}/verifiers/").content.decode()
    assert '<option value="math"' in page
    assert '<option value="judge"' not in page and '<option value="reward_model"' not in page


@pytest.fixture
def saved_judge(definition: VerifierDefinition, alice: User) -> VerifierVersion:
    """A judge version written straight to the table (as one saved before definitions refused them)."""
    return VerifierVersion.objects.create(
        definition=definition, number=2, verifier="judge", params=SOURCES["judge"], created_by=alice
    )


def test_a_saved_reward_source_version_is_never_run_on_the_bench(
    api: Api, bob: User, join: Join, saved_judge: VerifierVersion
) -> None:
    join(bob, "viewer")  # the bench is open to any reader
    resp = api(bob).post(
        f"/api/verifier-versions/{saved_judge.pk}/test/", {"completion": "4", "reference": "4"}, format="json"
    )
    assert resp.status_code == 400 and "Reward models page" in resp.json()["message"]
    assert "verifier" in resp.json()["extra"]["fields"]


def test_a_saved_reward_source_version_starts_no_audit_or_rescore_and_builds_nothing(
    api: Api, alice: User, saved_judge: VerifierVersion
) -> None:
    with pytest.raises(InvalidInput, match="Reward models page"):
        verification_audit_start(version=saved_judge, actor=alice)
    resp = api(alice).post(f"/api/verifier-versions/{saved_judge.pk}/audit/", {}, format="json")
    assert resp.status_code == 400
    assert not VerificationJob.objects.filter(version=saved_judge).exists()
    # what a worker's audit, rescore or annotation scoring job builds the verifier with
    for source, params in SOURCES.items():
        with pytest.raises(InvalidInput, match="Reward models page"):
            bench.built(source, params)
