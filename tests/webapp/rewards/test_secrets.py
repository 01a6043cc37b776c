"""Project secrets: encrypted at rest, write-only through the API (no answer, list or error holds a value), never
logged, managed by owners and admins only, and flagged (not lost silently) when the server's key changes."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.rewards.helpers import SECRET_VALUE
from webapp.rewards import secrets
from webapp.rewards.models import ProjectSecret
from webapp.rewards.selectors import secrets_for_project
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]


def put(api: Api, user: User, project: Project, name: str, value: object) -> tuple[int, str]:
    response = api(user).put(f"/api/projects/{project.pk}/secrets/{name}/", {"value": value}, format="json")
    return response.status_code, response.content.decode()


def test_the_stored_row_holds_no_plaintext(api: Api, alice: User, project: Project) -> None:
    status, body = put(api, alice, project, "OPENAI_KEY", SECRET_VALUE)
    assert status == 200, body
    row = ProjectSecret.objects.get(project=project, name="OPENAI_KEY")
    stored = bytes(row.ciphertext)
    assert SECRET_VALUE.encode() not in stored and b"SECRETVALUE" not in stored
    assert secrets.decrypt(row.ciphertext) == SECRET_VALUE
    assert SECRET_VALUE not in repr(row) and SECRET_VALUE not in str(row)


def test_no_answer_holds_the_value(api: Api, alice: User, project: Project) -> None:
    answers = [put(api, alice, project, "OPENAI_KEY", SECRET_VALUE)]
    answers.append(put(api, alice, project, "OPENAI_KEY", SECRET_VALUE + "x" * 9000))  # too long: refused
    answers.append(put(api, alice, project, "9bad name", SECRET_VALUE))
    listing = api(alice).get(f"/api/projects/{project.pk}/secrets/")
    answers.append((listing.status_code, listing.content.decode()))
    assert [a[0] for a in answers] == [200, 400, 400, 200]
    assert all(SECRET_VALUE not in body and "SECRETVALUE" not in body for _, body in answers)
    assert listing.json()[0]["name"] == "OPENAI_KEY" and set(listing.json()[0]) == {
        "name", "updated_at", "updated_by", "readable",
    }  # fmt: skip


def test_the_browsable_api_does_not_echo_the_value(api: Api, alice: User, project: Project) -> None:
    client = api(alice)
    for value in (SECRET_VALUE, SECRET_VALUE * 300):  # accepted, and refused as too long
        response = client.put(
            f"/api/projects/{project.pk}/secrets/OPENAI_KEY/",
            {"value": value},
            format="json",
            HTTP_ACCEPT="text/html",
        )
        assert response["Content-Type"].startswith("text/html")
        assert "SECRETVALUE" not in response.content.decode()


def test_a_key_pasted_as_the_name_is_not_repeated(api: Api, alice: User, project: Project) -> None:
    status, body = put(api, alice, project, "sk_live_0123456789ABCDEFabcdef", "value")
    assert status == 400 and "looks like an API key" in body
    assert "sk_live_0123456789ABCDEFabcdef" not in body


def test_the_value_is_never_logged(
    api: Api, alice: User, project: Project, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    put(api, alice, project, "OPENAI_KEY", SECRET_VALUE)
    put(api, alice, project, "OPENAI_KEY", "")  # a refused one logs a warning for the 400
    put(api, alice, project, "OPENAI_KEY", SECRET_VALUE * 400)
    assert caplog.records, "the 400s should have been logged by django.request"
    assert all("SECRETVALUE" not in record.getMessage() for record in caplog.records)
    assert "SECRETVALUE" not in caplog.text


@pytest.mark.parametrize(
    ("role", "status"), [("viewer", 403), ("annotator", 403), ("admin", 200), (None, 404)]
)
def test_only_owners_and_admins_set_secrets(
    api: Api, bob: User, join: Join, project: Project, role: str | None, status: int
) -> None:
    join(bob, role)
    assert put(api, bob, project, "OPENAI_KEY", SECRET_VALUE)[0] == status
    delete = api(bob).delete(f"/api/projects/{project.pk}/secrets/OPENAI_KEY/")
    assert delete.status_code == (204 if status == 200 else status)


@pytest.mark.parametrize(("role", "status"), [("viewer", 200), (None, 404)])
def test_members_see_the_names_and_outsiders_nothing(
    api: Api, alice: User, bob: User, join: Join, project: Project, role: str | None, status: int
) -> None:
    put(api, alice, project, "OPENAI_KEY", SECRET_VALUE)
    join(bob, role)
    response = api(bob).get(f"/api/projects/{project.pk}/secrets/")
    assert response.status_code == status
    assert SECRET_VALUE not in response.content.decode()


def test_setting_a_name_again_replaces_the_value_and_delete_removes_it(
    api: Api, alice: User, project: Project
) -> None:
    put(api, alice, project, "OPENAI_KEY", "first-value")
    put(api, alice, project, "OPENAI_KEY", "  second-value\n")
    row = ProjectSecret.objects.get(project=project)
    assert secrets.decrypt(row.ciphertext) == "second-value"
    assert api(alice).delete(f"/api/projects/{project.pk}/secrets/OPENAI_KEY/").status_code == 204
    assert not ProjectSecret.objects.exists()


def test_a_changed_server_key_flags_the_secrets_to_set_again(
    alice: User, project: Project, secret: ProjectSecret, settings: SettingsWrapper
) -> None:
    assert [row.readable for row in secrets_for_project(project=project)] == [True]
    settings.SECRET_KEY = "a-rotated-secret-key-" + "x" * 40
    assert [row.readable for row in secrets_for_project(project=project)] == [False]
    with pytest.raises(secrets.SecretUnreadable) as caught:
        secrets.decrypt(secret.ciphertext)
    assert "set it again" in str(caught.value)


def test_a_configured_fernet_key_is_used_instead_of_the_derived_one(
    project: Project, secret: ProjectSecret, settings: SettingsWrapper
) -> None:
    from cryptography.fernet import Fernet

    settings.RLVR_SECRETS_KEY = Fernet.generate_key().decode()
    assert not secrets.readable(secret.ciphertext)  # written under the derived key
    token = secrets.encrypt("v")
    assert Fernet(settings.RLVR_SECRETS_KEY.encode()).decrypt(token) == b"v"


def test_a_malformed_secrets_key_stops_the_server_naming_the_setting() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={"DJANGO_SETTINGS_MODULE": "webapp.settings", "RLVR_SECRETS_KEY": "not-a-key", "RLVR_DEBUG": "1",
             "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert "RLVR_SECRETS_KEY is not a Fernet key" in result.stderr and "Fernet.generate_key" in result.stderr
