"""Hash the plaintext tokens of REST framework's authtoken app (webapp/accounts/legacy.py); one way."""

from typing import Any

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

from webapp.accounts.legacy import hash_legacy_tokens


def forwards(apps: Any, schema_editor: BaseDatabaseSchemaEditor) -> None:
    hash_legacy_tokens(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
