"""Reading settings from environment variables: small helpers that fail loudly on a malformed value.

Each helper returns the default when the variable is unset (or empty) and raises ImproperlyConfigured
naming the variable, the bad value and what would be accepted, so a typo in a compose file stops the
server at start-up instead of surfacing later as odd behaviour.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str, *, environ: Mapping[str, str] | None = None) -> str:
    value = _raw(name, environ)
    return default if value is None else value


def env_bool(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    if value.lower() in TRUE_WORDS:
        return True
    if value.lower() in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(
        f"{name}={value!r} is not a boolean: use one of {', '.join(sorted(TRUE_WORDS | FALSE_WORDS))}"
    )


def env_int(
    name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not an integer: write digits only, e.g. {default}"
        ) from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is too small: it must be at least {minimum}")
    return number


def env_list(name: str, default: list[str], *, environ: Mapping[str, str] | None = None) -> list[str]:
    """A comma-separated list; blanks around items are dropped, empty items are an error."""
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if any(item == "" for item in items):
        raise ImproperlyConfigured(
            f"{name}={value!r} has an empty item: separate values with single commas, e.g. 'a,b'"
        )
    return items


def env_choice(
    name: str, default: str, choices: tuple[str, ...], *, environ: Mapping[str, str] | None = None
) -> str:
    value = env_str(name, default, environ=environ)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not valid: use one of {', '.join(choices)}")
    return value


def database_from_url(url: str, *, base_dir: Path) -> dict[str, Any]:
    """Turn ``DATABASE_URL`` into one entry of Django's ``DATABASES``.

    ``sqlite:///relative/path.sqlite3`` (relative to ``base_dir``), ``sqlite:////absolute/path.sqlite3``
    (the dj-database-url convention) or ``postgres://user:password@host:port/name?sslmode=require``
    (``postgresql://`` too; query parameters become connection OPTIONS).
    """
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return _sqlite_database(url, parts.path, base_dir)
    if parts.scheme in ("postgres", "postgresql"):
        return _postgres_database(url, parts)
    raise ImproperlyConfigured(
        f"DATABASE_URL={url!r} has an unsupported scheme {parts.scheme!r}: use sqlite:///path/to/db.sqlite3 "
        "or postgres://user:password@host:5432/name"
    )


def sqlite_database(path: Path) -> dict[str, Any]:
    """SQLite tuned for one web process and one worker writing at once (the embedded mode)."""
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            "timeout": 20,
            # IMMEDIATE: a writer takes the lock when its transaction starts, so two writers queue on the
            # busy timeout instead of one failing with "database is locked" half-way through.
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }


def _sqlite_database(url: str, path: str, base_dir: Path) -> dict[str, Any]:
    relative = path[1:] if path.startswith("/") else path
    if not relative:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no file: use sqlite:///path/to/db.sqlite3")
    file = Path(relative) if relative.startswith("/") else base_dir / relative
    return sqlite_database(file)


def _postgres_database(url: str, parts: SplitResult) -> dict[str, Any]:
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured(
            f"DATABASE_URL={_redact(url)!r} names no database: end it with /<database name>"
        )
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"DATABASE_URL={_redact(url)!r} has a port that is not a number") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(port or ""),
        "OPTIONS": dict(parse_qsl(parts.query)),
    }


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def env_paths(name: str, default: list[Path], *, environ: Mapping[str, str] | None = None) -> list[Path]:
    """A colon-separated list of absolute folders (as PATH); empty or relative items are an error."""
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(":")]
    bad = [item for item in items if not item or not item.startswith("/")]
    if bad:
        raise ImproperlyConfigured(
            f"{name}={value!r} has an empty or relative item {bad[0]!r}: give absolute folders separated by "
            "single colons, e.g. '/srv/models:/data/models'"
        )
    return [Path(item) for item in items]
