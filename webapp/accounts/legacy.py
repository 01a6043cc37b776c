"""The plaintext tokens of Django REST framework's authtoken app, hashed into ApiToken (migration 0002).

Each old token keeps working, now checked by its digest, until ``RLVR_API_TOKEN_DAYS`` after the
migration; the plaintext rows are then deleted (the table itself stays, owned by its old migrations).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.utils import timezone
from django.utils.dateparse import parse_datetime

LEGACY_TABLE = "authtoken_token"
MIGRATED_NAME = "issued before tokens were hashed"


def hash_legacy_tokens(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> int:
    """Copy every ``authtoken_token`` row as a digest, then delete the plaintext; returns how many."""
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return 0
    api_token = apps.get_model("accounts", "ApiToken")
    table = connection.ops.quote_name(LEGACY_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {table}")
        rows = cursor.fetchall()
    expires = timezone.now() + timedelta(days=int(settings.RLVR_API_TOKEN_DAYS))
    records = [
        api_token(
            user_id=user_id,
            name=MIGRATED_NAME,
            prefix=str(key)[:8],
            created_at=_aware(created, connection),
            expires_at=expires,
            digest=hashlib.sha256(str(key).encode("utf-8")).hexdigest(),
        )
        for key, user_id, created in rows
    ]
    api_token.objects.bulk_create(records, ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")
    return len(rows)


def _aware(value: datetime | str, connection: BaseDatabaseWrapper) -> datetime:
    """A raw ``created`` value as an aware datetime: PostgreSQL returns one; SQLite stores naive text in the
    connection's time zone (UTC), which its cursor returns parsed or, for an unknown column type, as text."""
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if parsed is None:
        raise ValueError(f"{LEGACY_TABLE}.created holds {value!r}, which is not a date and time")
    return timezone.make_aware(parsed, connection.timezone) if timezone.is_naive(parsed) else parsed
