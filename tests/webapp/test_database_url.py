from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp.env import database_from_url


def test_a_postgres_url_becomes_a_postgresql_database() -> None:
    db = database_from_url(
        "postgres://rlvr:s%40cret@db.internal:5433/studio?sslmode=require", base_dir=Path("/r")
    )
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "studio",
        "rlvr",
        "s@cret",
        "db.internal",
        "5433",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_the_postgresql_scheme_is_accepted_too() -> None:
    assert database_from_url("postgresql://u@h/n", base_dir=Path("/r"))["PORT"] == ""


def test_a_sqlite_url_with_three_slashes_is_relative_to_the_repository() -> None:
    assert (
        database_from_url("sqlite:///data/db.sqlite3", base_dir=Path("/repo"))["NAME"]
        == "/repo/data/db.sqlite3"
    )


def test_a_sqlite_url_with_four_slashes_is_absolute() -> None:
    db = database_from_url("sqlite:////var/lib/rlvr/db.sqlite3", base_dir=Path("/repo"))
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == "/var/lib/rlvr/db.sqlite3"


def test_an_unknown_scheme_is_refused_with_examples() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"unsupported scheme 'mysql'.*postgres://"):
        database_from_url("mysql://u@h/n", base_dir=Path("/r"))


def test_a_postgres_url_without_a_database_name_is_refused_and_hides_the_password() -> None:
    with pytest.raises(ImproperlyConfigured, match="names no database") as err:
        database_from_url("postgres://u:topsecret@h:5432/", base_dir=Path("/r"))
    assert "topsecret" not in str(err.value)


def test_a_port_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="port that is not a number"):
        database_from_url("postgres://u@h:abc/n", base_dir=Path("/r"))
