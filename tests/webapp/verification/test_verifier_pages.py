"""Verifier pages by role, their forms, and untrusted text shown as text."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.experiments.models import Run
from webapp.teams.models import Project
from webapp.verification.job_services import verification_audit_start, verification_rescore_start
from webapp.verification.models import TestStatus, VerifierDefinition, VerifierVersion
from webapp.verification.services import verifier_definition_create, verifier_test_case_create

Join = Callable[[User, str | None], User]


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page_urls(project: Project, definition: VerifierDefinition, version: VerifierVersion) -> list[str]:
    return [
        f"/projects/{project.pk}/verifiers/",
        f"/verifiers/{definition.pk}/",
        f"/verifier-versions/{version.pk}/",
    ]


@pytest.mark.parametrize("role", ["viewer", "annotator", "admin"])
def test_members_see_every_read_page(
    bob: User,
    join: Join,
    project: Project,
    definition: VerifierDefinition,
    version: VerifierVersion,
    role: str,
) -> None:
    join(bob, role)
    for url in page_urls(project, definition, version):
        resp = client_for(bob).get(url)
        assert resp.status_code == 200, url
    detail = client_for(bob).get(f"/verifiers/{definition.pk}/").content.decode()
    assert ('id="edit-verifier"' in detail) == (role == "admin")
    assert 'id="bench"' in detail


def test_outsiders_get_404_on_every_page(
    bob: User, join: Join, project: Project, definition: VerifierDefinition, version: VerifierVersion
) -> None:
    join(bob, None)
    for url in [*page_urls(project, definition, version), f"/verifiers/{definition.pk}/edit/"]:
        assert client_for(bob).get(url).status_code == 404, url


def test_a_viewer_cannot_open_the_edit_form(bob: User, join: Join, definition: VerifierDefinition) -> None:
    join(bob, "viewer")
    assert client_for(bob).get(f"/verifiers/{definition.pk}/edit/").status_code == 403


def test_the_list_form_creates_a_definition(alice: User, project: Project) -> None:
    resp = client_for(alice).post(
        f"/projects/{project.pk}/verifiers/",
        {"name": "boxed math", "description": "", "verifier": "math", "params": '{"extract": "boxed"}'},
    )
    definition = VerifierDefinition.objects.get(name="boxed math")
    assert resp.status_code == 302 and resp["Location"] == f"/verifiers/{definition.pk}/"
    assert definition.versions.get().params["extract"] == "boxed"


def test_invalid_json_params_keep_the_input_and_say_what_is_wrong(alice: User, project: Project) -> None:
    resp = client_for(alice).post(
        f"/projects/{project.pk}/verifiers/", {"name": "x", "verifier": "math", "params": "{extract: boxed"}
    )
    html = resp.content.decode()
    assert resp.status_code == 200 and "Params are not valid JSON" in html and "{extract: boxed" in html
    assert not VerifierDefinition.objects.filter(name="x").exists()


def test_the_edit_form_saves_a_new_version(alice: User, definition: VerifierDefinition) -> None:
    resp = client_for(alice).post(
        f"/verifiers/{definition.pk}/edit/",
        {"verifier": "exact", "params": '{"extract": "full"}', "note": "whole text"},
    )
    assert resp.status_code == 302
    assert definition.versions.get(number=2).note == "whole text"


def test_the_case_form_saves_a_case_and_rechecks(alice: User, definition: VerifierDefinition) -> None:
    client_for(alice).post(
        f"/verifiers/{definition.pk}/cases/",
        {"name": "wrong", "completion": "41", "reference": "42", "expected": "accept"},
    )
    assert definition.versions.get(number=1).test_status == TestStatus.FAILING
    html = client_for(alice).get(f"/verifiers/{definition.pk}/").content.decode()
    assert "cases fail" in html and "case-failed" in html


def test_untrusted_text_is_escaped(alice: User, project: Project) -> None:
    evil = '<img src=x onerror="alert(1)">'
    definition = verifier_definition_create(
        project=project, actor=alice, name=evil, verifier="exact", description=evil
    )
    verifier_test_case_create(
        definition=definition, actor=alice, name=evil, completion=evil, reference=evil, expected_correct=True
    )
    for url in (f"/projects/{project.pk}/verifiers/", f"/verifiers/{definition.pk}/"):
        html = client_for(alice).get(url).content.decode()
        assert evil not in html and "&lt;img src=x" in html, url


def test_the_project_page_links_the_verifiers(alice: User, project: Project) -> None:
    html = client_for(alice).get(f"/projects/{project.pk}/").content.decode()
    assert f'href="/projects/{project.pk}/verifiers/"' in html


def test_the_experiment_form_loads_the_verifier_picker(alice: User, project: Project) -> None:
    html = client_for(alice).get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert "js/verification_picker.js" in html and f'data-project="{project.pk}"' in html


def test_the_version_page_hands_its_newest_jobs_to_the_script(
    alice: User, casefold: VerifierVersion, run_with_rollouts: Run
) -> None:
    """Reopening the page shows the audit and rescore started earlier (their progress, or their result)."""
    verification_audit_start(version=casefold, actor=alice)
    newest_audit = verification_audit_start(version=casefold, actor=alice)  # the same queued job
    rescore = verification_rescore_start(version=casefold, run=run_with_rollouts, actor=alice)
    resp = client_for(alice).get(f"/verifier-versions/{casefold.pk}/")
    data = json.loads(re.search(r'id="page-data"[^>]*>(.*?)</script>', resp.content.decode(), re.S).group(1))
    assert data == {"version_id": casefold.pk, "audit_job": newest_audit.pk, "rescore_job": rescore.pk}
    assert 'id="audit-progress"' in resp.content.decode() and 'id="rescore-limit"' in resp.content.decode()
