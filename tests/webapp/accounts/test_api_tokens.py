"""API tokens: hashed at rest, shown once, expiring, revocable by their owner, ended by a new password."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone
from pytest_django import Settings as SettingsWrapper
from rest_framework.test import APIClient

from webapp.accounts.models import ApiToken
from webapp.accounts.tokens import issue_token

Api = Callable[[User | None], APIClient]
ALICE = {"username": "alice", "password": "pw-alice-123"}


def with_token(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def login(api: Api) -> dict[str, object]:
    response = api(None).post("/api/auth/token/", {**ALICE, "name": "laptop"}, format="json")
    assert response.status_code == 200, response.json()
    body: dict[str, object] = response.json()
    return body


def test_the_database_never_holds_the_token(api: Api, alice: User) -> None:
    token = str(login(api)["token"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken")
        rows = cursor.fetchall()
    assert len(rows) == 1
    assert not any(token in str(value) for value in rows[0])
    assert ApiToken.objects.get().digest != token


def test_the_token_is_shown_at_creation_and_never_again(api: Api, alice: User) -> None:
    token = str(login(api)["token"])
    client = with_token(token)
    listed = client.get("/api/tokens/").json()
    one = client.get(f"/api/tokens/{listed[0]['id']}/").json()
    assert token not in str(listed) + str(one)
    assert (listed[0]["name"], listed[0]["prefix"], listed[0]["current"]) == ("laptop", token[:12], True)


def test_a_new_token_expires_after_the_configured_days(
    settings: SettingsWrapper, api: Api, alice: User
) -> None:
    settings.RLVR_API_TOKEN_DAYS = 7
    login(api)
    record = ApiToken.objects.get()
    assert record.expires_at - record.created_at == timedelta(days=7)


def test_an_expired_token_is_a_401_that_says_to_log_in_again(alice: User) -> None:
    issued = issue_token(alice)
    ApiToken.objects.filter(pk=issued.record.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = with_token(issued.token).get("/api/projects/")
    assert response.status_code == 401
    assert "expired" in response.json()["message"] and "rlvr login" in response.json()["message"]


def test_a_revoked_token_is_refused(alice: User) -> None:
    issued = issue_token(alice)
    client = with_token(issued.token)
    assert client.delete(f"/api/tokens/{issued.record.pk}/").status_code == 204
    response = client.get("/api/projects/")
    assert response.status_code == 401
    assert "revoked" in response.json()["message"]


def test_logout_revokes_the_token_it_is_sent_with(alice: User) -> None:
    kept, used = issue_token(alice), issue_token(alice)
    assert with_token(used.token).delete("/api/tokens/current/").status_code == 204
    assert with_token(used.token).get("/api/projects/").status_code == 401
    assert with_token(kept.token).get("/api/projects/").status_code == 200


def test_revoke_all_ends_every_token_of_the_user_only(alice: User, bob: User) -> None:
    first, second, bobs = issue_token(alice), issue_token(alice), issue_token(bob)
    assert with_token(first.token).delete("/api/tokens/").status_code == 204
    assert with_token(second.token).get("/api/projects/").status_code == 401
    assert with_token(bobs.token).get("/api/projects/").status_code == 200


def test_a_user_cannot_see_or_revoke_someone_elses_token(alice: User, bob: User) -> None:
    bobs = issue_token(bob)
    client = with_token(issue_token(alice).token)
    assert bobs.record.pk not in [t["id"] for t in client.get("/api/tokens/").json()]
    response = client.delete(f"/api/tokens/{bobs.record.pk}/")
    assert response.status_code == 404
    assert "GET /api/tokens/" in response.json()["message"]
    assert with_token(bobs.token).get("/api/projects/").status_code == 200


def test_a_new_password_revokes_every_token(alice: User) -> None:
    issued = issue_token(alice)
    alice.set_password("a-new-password-456")
    alice.save()
    assert with_token(issued.token).get("/api/projects/").status_code == 401


def test_saving_a_user_without_a_new_password_keeps_the_tokens(alice: User) -> None:
    issued = issue_token(alice)
    alice.first_name = "Alice"
    alice.save()
    assert with_token(issued.token).get("/api/projects/").status_code == 200


def test_use_is_recorded_on_the_token(alice: User) -> None:
    issued = issue_token(alice)
    assert with_token(issued.token).get("/api/projects/").status_code == 200
    assert ApiToken.objects.get(pk=issued.record.pk).last_used_at is not None


@pytest.mark.django_db(transaction=True)
def test_the_migration_hashes_the_old_plaintext_tokens_and_deletes_them() -> None:
    from django.apps import apps

    from webapp.accounts.legacy import LEGACY_TABLE, hash_legacy_tokens

    alice = User.objects.create_user(username="alice", password="pw-alice-123")
    old_key = "0123456789abcdef0123456789abcdef01234567"
    created = timezone.now() - timedelta(days=400)
    # The table as REST framework's authtoken migrations made it, on either database back-end.
    when = connection.data_types["DateTimeField"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {LEGACY_TABLE} (key varchar(40) PRIMARY KEY, user_id integer, created {when})"
        )
        cursor.execute(
            f"INSERT INTO {LEGACY_TABLE} VALUES (%s, %s, %s)",
            [old_key, alice.pk, connection.ops.adapt_datetimefield_value(created)],
        )
    try:
        with connection.schema_editor() as editor:
            assert hash_legacy_tokens(apps, editor) == 1
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {LEGACY_TABLE}")
            assert cursor.fetchone() == (0,)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {LEGACY_TABLE}")
    assert with_token(old_key).get("/api/tokens/").status_code == 200
    migrated = ApiToken.objects.get()
    assert migrated.digest != old_key
    assert migrated.created_at == created  # the old token's own creation time, as an aware datetime
